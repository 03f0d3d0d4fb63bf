# Onset and end of congestion.
CASE_TITLE="onoff: open, 820 kbit/s from 10 s, open from 40 s"
CASE_SCALE=1 CASE_DURATION=60 CASE_RATE=open CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=("10 rate 820" "40 rate open")
CASE_FLOWS=("media 0 60")
