# RFC 8867 §5.8 pause and resume: three flows; flow 0 stops at 40 s and comes back at 60 s.
CASE_TITLE="RFC 8867 5.8: pause/resume, 3 flows, flow 0 away 40-60 s"
CASE_DURATION=120 CASE_RATE=3500 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 120 pause=40:20" "media 0 120" "media 0 120")
