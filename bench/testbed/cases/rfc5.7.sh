# RFC 8867 §5.7 two media flows against short TCP flows (10 on/off users, 30-50 KB files).
CASE_TITLE="RFC 8867 5.7: 2 flows vs short TCP flows"
CASE_DURATION=300 CASE_RATE=2000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 5 299" "media 5 299" "tcpshort 0 300")
