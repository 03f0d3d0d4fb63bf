# Filled in by the transport work.
