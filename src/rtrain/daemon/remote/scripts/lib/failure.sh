# rtrain-needs: run_meta own_files
# Why a run failed, as one line (RS_DETAIL) from its status, its ranks' reports and its log.
RS_STATE='' RS_EXIT='' RS_SIGNAL='' RS_STARTED='' RS_DETAIL='' RS_REBOOTED='' RS_STALLED='' RS_FAILED_AT='' RS_RANK0=''

# Why a run failed, as one line -> RS_DETAIL: the rank that failed first (rank_failure, as
# rtrain-ranks wrote it; else torchrun's summary), a death by signal, else what the log said
# last (its last exception line, else its last line). RUN_DIR CODE (the wrapper's status).
failure_reason() {
	fr_text=
	own_dir "$1"
	if [ -f "$BOOK/rank_failure" ]; then
		rank_failure_reason "$1" && return 0
	fi
	if [ -d "$1/torchrun_logs" ]; then
		torchrun_failure "$1"
		if [ -n "$fr_text" ]; then
			set_detail "$fr_text"
			return 0
		fi
	fi
	if [ "$2" -gt 128 ]; then
		signal_words "$(($2 - 128))" "$1" -
	else
		fr_found=$(last_words "$1/train.log")
		fr_rank=${fr_found#*"$TAB"}
		fr_rank=${fr_rank%%"$TAB"*}
		fr_text=${fr_found#*"$TAB"*"$TAB"}
		case $fr_found in
		"exception$TAB"* | "rtrain$TAB"*) ;;
		# train.log holds stdout too: a last line is a reason only when it reads like one
		# (`step 9 | loss 0.1` is not why a run failed).
		"line$TAB"*) reads_like_why "$fr_text" || fr_text= ;;
		*) fr_text= ;;
		esac
		[ -n "$fr_text" ] && [ "$fr_rank" != - ] && fr_text="rank $fr_rank: $fr_text"
	fi
	set_detail "$fr_text"
}

# True when a line of a log reads like an error message (what a failed program says last on
# stderr, where stdout and stderr share one log).
reads_like_why() {
	rw_text=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')
	case $rw_text in
	*error* | *fail* | *fatal* | *exception* | *abort* | *denied* | *"not found"* | *"no such"* | \
		*cannot* | *"can't"* | *"could not"* | *unable* | *invalid* | *refused* | *killed* | \
		*terminated* | *"out of memory"* | *segmentation* | *"not enough"* | *"timed out"* | \
		*panic* | *usage:* | *"no space"* | *missing*) return 0 ;;
	esac
	return 1
}

# RS_DETAIL <- TEXT as one line of at most 300 bytes; nothing for an empty TEXT.
set_detail() {
	[ -n "$1" ] || return 0
	RS_DETAIL=$(flat "$1" | cut -c 1-300)
	[ -n "$RS_DETAIL" ] || RS_DETAIL=-
}

# SIGNAL RUN_DIR PID -> fr_text: `killed by SIGKILL`, with `, out of memory?` where the
# kernel's word says so: the run's cgroup counted an OOM kill while it ran (`oom_killed`,
# from rtrain-run), or the kernel log, where it is readable, names PID as killed.
signal_words() {
	sw_name=$(kill -l "$1" 2>/dev/null) || sw_name=
	case $sw_name in
	'' | *[!A-Z0-9+-]*) fr_text="killed by signal $1" ;;
	SIG*) fr_text="killed by $sw_name" ;;
	*) fr_text="killed by SIG$sw_name" ;;
	esac
	[ "$1" = 9 ] || return 0
	own_dir "$2"
	if [ -e "$BOOK/oom_killed" ] ||
		{ is_uint "$3" && dmesg 2>/dev/null | grep -qi -e "killed process $3 "; }; then
		fr_text="$fr_text, out of memory?"
	fi
}

# rank_failure (rtrain-ranks: RANK EXIT SIGNAL PID STDERR ERROR_MESSAGE [TIME], `-` for none) ->
# RS_DETAIL `rank R: WHY`, or `rank R (exit N): WHY` for an exit other than 1; WHY is the
# rank's last exception line, else its error file's message, else its last stderr line.
# TIME (epoch seconds, the rank's last sign of life) -> RS_FAILED_AT: which node of a run
# across hosts failed first.
rank_failure_reason() {
	rf_line=
	own_dir "$1"
	{ IFS= read -r rf_line <"$BOOK/rank_failure"; } 2>/dev/null
	IFS=$TAB read -r rf_rank rf_exit rf_signal rf_pid rf_stderr rf_message rf_time <<RF_EOF
$rf_line
RF_EOF
	is_uint "$rf_rank" || return 1
	case $rf_time in
	'' | *[!0-9.]* | *.*.*) ;;
	*) RS_FAILED_AT=$rf_time ;;
	esac
	fr_text=
	case $rf_stderr in
	/*) ;;
	*) rf_stderr=$1/$rf_stderr ;;
	esac
	if is_uint "$rf_signal"; then
		signal_words "$rf_signal" "$1" "$rf_pid"
		# SIGABRT after a traceback: the exception ended the program and a library's
		# teardown aborted it (torch's process groups do); the exception says why.
		if [ "$rf_signal" = 6 ]; then
			rf_found=$(last_words "$rf_stderr")
			case $rf_found in
			"exception$TAB"*) fr_text="${rf_found#*"$TAB"*"$TAB"} (then $fr_text)" ;;
			esac
		fi
	else
		rf_found=$(last_words "$rf_stderr")
		case $rf_found in
		"exception$TAB"*) fr_text=${rf_found#*"$TAB"*"$TAB"} ;;
		*)
			if [ -n "$rf_message" ] && [ "$rf_message" != - ]; then
				fr_text=$rf_message
			elif [ -n "$rf_found" ]; then
				fr_text=${rf_found#*"$TAB"*"$TAB"}
			fi
			;;
		esac
	fi
	rf_who="rank $rf_rank"
	is_uint "$rf_exit" && [ "$rf_exit" != 1 ] && rf_who="$rf_who (exit $rf_exit)"
	set_detail "$rf_who${fr_text:+: $fr_text}"
}

# last_words LOG [RANK]: what a failed program said last, from the end of LOG: `exception
# RANK LINE` for the final line of its last Python traceback, else `line RANK LINE` for its
# last non-empty line (`rtrain RANK LINE` when that is rtrain's own message, such as the GPU
# gate's refusal); nothing for an empty log. A `[rankN]: ` prefix (torch's own, or
# rtrain-ranks') is read through: RANK is N, else `-`; with RANK given, other ranks' lines
# are skipped. rtrain's own `rtrain: ` before a message goes. A bar redrawn after the
# exception (tqdm's, at exit) is not its last word: the exception is.
last_words() {
	[ -f "$1" ] || return 0
	tail -c 65536 "$1" 2>/dev/null | tr '\r' '\n' | awk -v want="${2-}" '
		{
			line = $0; rank = "-"
			if (match(line, /^\[rank[0-9]+\]: ?/)) {
				rank = substr(line, 1, RLENGTH); gsub(/[^0-9]/, "", rank)
				line = substr(line, RLENGTH + 1)
			}
			if (want != "" && rank != "-" && rank != want) next
			# A traceback may start after a progress bar drawn with no newline (tqdm, Lightning).
			if (index(line, "Traceback (most recent call last):")) { tb[rank] = 1; next }
			if (line ~ /^[ \t]*$/) next
			if (tb[rank]) {
				if (line ~ /^[ \t]/) next
				tb[rank] = 0
				# torchrun agent exception says only that a rank failed
				if (line !~ /ChildFailedError/) { exc = line; erank = rank }
				next
			}
			if (line ~ /^==> rtrain: attempt /) next
			lkind = sub(/^rtrain: /, "", line) ? "rtrain" : "line"
			last = line; lrank = rank
		}
		END {
			if (exc != "") printf "exception\t%s\t%s\n", erank, exc
			else if (last != "") printf "%s\t%s\t%s\n", lkind, lrank, last
		}'
}

# A torchrun run that failed without rank_failure (its relay did not run): fr_text becomes
# `rank N: FIRST ERROR LINE`. From this attempt's error files of the ranks
# (TORCHELASTIC_ERROR_FILE, written by torch's @record), the first written; else from
# torchrun's own summary in the log (the root cause's rank and exit code) and that rank's
# last exception line in the log.
torchrun_failure() {
	tf_best='' tf_rank='' tf_message='' tf_exit=''
	# The glob must expand even for a caller in `set -f` (watch.sh).
	case $- in
	*f*) tf_noglob=1 ;;
	*) tf_noglob= ;;
	esac
	set +f
	for tf_file in "$1"/torchrun_logs/*/attempt_*/*/error.json; do
		[ -f "$tf_file" ] || continue
		tf_json=$(head -c 65536 "$tf_file" 2>/dev/null) || continue
		tf_text=$(printf '%s\n' "$tf_json" | json_first_string)
		[ -n "$tf_text" ] || continue
		tf_stamp=$(printf '%s\n' "$tf_json" | sed -n 's/.*"timestamp": "\([0-9]*\)".*/\1/p')
		# An earlier attempt's file (before a restart) is not this attempt's failure.
		if is_uint "$tf_stamp" && is_uint "$META_STARTED" && [ "$tf_stamp" -lt "$META_STARTED" ]; then
			continue
		fi
		# The file written first: its time to the nanosecond (the stamp inside has seconds).
		# shellcheck disable=SC3013 # dash, bash, busybox and zsh all have -ot; POSIX has no mtime test
		if [ -z "$tf_best" ] || [ "$tf_file" -ot "$tf_best" ]; then
			tf_best=$tf_file tf_message=$tf_text
			tf_rank=${tf_file%/error.json}
			tf_rank=${tf_rank##*/}
		fi
	done
	[ -n "$tf_noglob" ] && set -f
	if [ -z "$tf_best" ] && [ -f "$1/train.log" ]; then
		tf_found=$(tail -c 262144 "$1/train.log" 2>/dev/null | awk '
			/^Root Cause \(first observed failure\):/ { root = 1; rank = ""; code = ""; next }
			root && rank == "" && /^ *rank *: [0-9]+/ { sub(/^ *rank *: /, ""); rank = $1; next }
			root && code == "" && /^ *exitcode *: -?[0-9]+/ { sub(/^ *exitcode *: /, ""); code = $1; next }
			END { if (rank != "") printf "%s\t%s\n", rank, code }')
		tf_rank=${tf_found%%"$TAB"*}
		tf_exit=${tf_found#*"$TAB"}
		if [ -n "$tf_rank" ]; then
			tf_said=$(last_words "$1/train.log" "$tf_rank")
			case $tf_said in
			"exception$TAB"*) tf_message=${tf_said#*"$TAB"*"$TAB"} ;;
			esac
		fi
	fi
	[ -n "$tf_rank" ] || return 0
	case $tf_exit in
	-[0-9]*)
		signal_words "${tf_exit#-}" "$1" -
		fr_text="rank $tf_rank: $fr_text"
		return 0
		;;
	0 | [2-9] | [1-9][0-9]*) fr_text="rank $tf_rank (exit $tf_exit)" ;;
	*) fr_text="rank $tf_rank" ;;
	esac
	fr_text="$fr_text: ${tf_message:-see train.log}"
}

# The first JSON string value on stdin (`{"message": {"message": "TEXT"`), decoded: the
# escapes json.dump writes (quote, backslash, \n, \uXXXX and surrogate pairs) become their
# characters (UTF-8), a line break a space.
json_first_string() {
	LC_ALL=C awk '
		function hexval(h,   i, v) {
			v = 0; h = tolower(h)
			for (i = 1; i <= 4; i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v
		}
		function utf8(c) {
			if (c < 128) return sprintf("%c", c)
			if (c < 2048) return sprintf("%c%c", 192 + int(c / 64), 128 + c % 64)
			if (c < 65536) return sprintf("%c%c%c", 224 + int(c / 4096), 128 + int(c / 64) % 64, 128 + c % 64)
			return sprintf("%c%c%c%c", 240 + int(c / 262144), 128 + int(c / 4096) % 64, 128 + int(c / 64) % 64, 128 + c % 64)
		}
		{
			lead = "{\"message\": {\"message\": \""
			if (index($0, lead) != 1) exit
			s = substr($0, length(lead) + 1); out = ""; n = length(s)
			for (i = 1; i <= n; i++) {
				c = substr(s, i, 1)
				if (c == "\"") break
				if (c != "\\") { out = out c; continue }
				i++
				e = substr(s, i, 1)
				if (e == "u") {
					v = hexval(substr(s, i + 1, 4)); i += 4
					if (v >= 55296 && v < 56320 && substr(s, i + 1, 2) == "\\u") {
						w = hexval(substr(s, i + 3, 4))
						if (w >= 56320 && w < 57344) { v = 65536 + (v - 55296) * 1024 + (w - 56320); i += 6 }
					}
					out = out utf8(v)
				} else if (e == "n" || e == "t" || e == "r") out = out " "
				else out = out e
			}
			print out
			exit
		}'
}
