# Polling in steps shorter than a second where sleep(1) allows it.
NAP_PER_SECOND=

# Polling: `nap` sleeps a tenth of a second, or a whole one where sleep(1) takes only integers;
# NAP_PER_SECOND says how many naps make a second.
nap_init() {
	if sleep 0.01 2>/dev/null; then
		NAP_PER_SECOND=10
	else
		NAP_PER_SECOND=1
	fi
}

nap() {
	if [ "$NAP_PER_SECOND" = 10 ]; then
		sleep 0.1
	else
		sleep 1
	fi
}
