# RFC 8867 §5.4 three competing media flows of the same algorithm, joining 20 s apart.
CASE_TITLE="RFC 8867 5.4: 3 competing flows joining at 0/20/40 s"
CASE_DURATION=120 CASE_RATE=3500 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 120" "media 20 120" "media 40 120")
