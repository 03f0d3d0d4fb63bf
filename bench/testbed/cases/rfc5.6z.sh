# RFC 8867 §5.6 at ~0 RTT (no added delay; issue 21 item 5 asks for it beside 50 ms).
CASE_TITLE="RFC 8867 5.6z: media vs one long TCP, 300 ms queue, ~0 RTT"
CASE_DURATION=120 CASE_RATE=2000 CASE_QUEUE_MS=300 CASE_OWD=0
CASE_EVENTS=()
CASE_FLOWS=("media 5 119" "tcp 0 120")
