# Unresponsive cross traffic: 800 kbit/s UDP bursts into a 1640 kbit/s bottleneck.
CASE_TITLE="cross: 1640 kbit/s, 800 kbit/s UDP at 10-20 s and 30-40 s"
CASE_SCALE=1 CASE_DURATION=55 CASE_RATE=1640 CASE_QUEUE_MS=100 CASE_BURST=4000b CASE_OWD=50
CASE_EVENTS=()
CASE_FLOWS=("media 0 55" "udp 10 20 rate=800" "udp 30 40 rate=800")
