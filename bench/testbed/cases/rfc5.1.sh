# RFC 8867 §5.1 variable available capacity, one media flow (rates: RFC x BED_SCALE).
CASE_TITLE="RFC 8867 5.1: variable capacity, 1 flow, 50 ms one-way"
CASE_DURATION=100 CASE_RATE=1000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=("40 rate 2500" "60 rate 600" "80 rate 1000")
CASE_FLOWS=("media 0 100")
