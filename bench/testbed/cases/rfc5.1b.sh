# RFC 8867 §5.1 with 100 ms one-way propagation (ns3-rmcat's tc51b).
CASE_TITLE="RFC 8867 5.1b: variable capacity, 1 flow, 100 ms one-way"
CASE_DURATION=100 CASE_RATE=1000 CASE_QUEUE_MS=300 CASE_OWD=100
CASE_EVENTS=("40 rate 2500" "60 rate 600" "80 rate 1000")
CASE_FLOWS=("media 0 100")
