# RFC 8867 §5.2 variable available capacity, two media flows of the same algorithm.
CASE_TITLE="RFC 8867 5.2: variable capacity, 2 flows"
CASE_DURATION=125 CASE_RATE=4000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=("25 rate 2000" "50 rate 3500" "75 rate 1000" "100 rate 2000")
CASE_FLOWS=("media 0 125" "media 0 125")
