# Issue 12's time-varying bottleneck: above the stream, stream/2, stream/1.2, stream/3, above.
CASE_TITLE="staircase: 1600, 615, 1025, 410, 1600 kbit/s"
CASE_SCALE=1 CASE_DURATION=70 CASE_RATE=1600 CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=("10 rate 615" "25 rate 1025" "40 rate 410" "55 rate 1600")
CASE_FLOWS=("media 0 70")
