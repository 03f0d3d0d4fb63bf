# No bottleneck: the uncongested reference, and the clip's rate on the wire (BED_SCALE).
CASE_TITLE="open: no bottleneck (200 Mbit/s)"
CASE_SCALE=1 CASE_DURATION=30 CASE_RATE=open CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 30")
