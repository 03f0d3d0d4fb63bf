# RFC 8867 §5.5 round-trip time fairness: five flows, one-way 10/25/50/100/150 ms, joining 10 s apart.
CASE_TITLE="RFC 8867 5.5: RTT fairness, 5 flows at 10-150 ms one-way"
CASE_DURATION=300 CASE_RATE=4000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 300 owd=10" "media 10 300 owd=25" "media 20 300 owd=50" "media 30 300 owd=100"
  "media 40 300 owd=150")
