# RFC 8867 §5.3 congested feedback link: media both ways, both directions shaped. Flow 0 is
# forward (server in snd); flow 1 is reverse (a second server in rcv1, its client in snd), so each
# flow's feedback crosses the other direction's bottleneck.
CASE_TITLE="RFC 8867 5.3: congested feedback link, media both ways"
CASE_DURATION=100 CASE_RATE=2000 CASE_BACK_RATE=2000 CASE_QUEUE_MS=300 CASE_OWD=50
CASE_EVENTS=("20 rate 1000" "35 back 800" "40 rate 500" "60 rate 2000" "70 back 2000")
CASE_FLOWS=("media 0 100" "media-back 0 100")
