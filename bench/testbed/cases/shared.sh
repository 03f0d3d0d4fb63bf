# Three sessions of the same policy share one bottleneck (3 x 820 kbit/s) from 10 to 40 s.
CASE_TITLE="shared: 3 flows, 2460 kbit/s from 10 s to 40 s"
CASE_SCALE=1 CASE_DURATION=60 CASE_RATE=open CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=("10 rate 2460" "40 rate open")
CASE_FLOWS=("media 0 60" "media 0 60" "media 0 60")
