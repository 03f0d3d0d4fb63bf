# RFC 8867 §5.6 media against one long TCP NewReno flow, 300 ms queue. TCP's rate is not scaled:
# it takes what the (scaled) bottleneck leaves.
CASE_TITLE="RFC 8867 5.6: media vs one long TCP, 300 ms queue"
CASE_DURATION=120 CASE_RATE=2000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 5 119" "tcp 0 120")
