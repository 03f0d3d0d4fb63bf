# Standing congestion: the stream (~1.23 Mbit/s) into 820 kbit/s from the start.
CASE_TITLE="steady: 820 kbit/s (stream 1.5x) throughout"
CASE_SCALE=1 CASE_DURATION=45 CASE_RATE=820 CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 45")
