# The launch input the daemon writes on stdin: options and secrets.

# JSON string literals of the arguments, comma-separated. awk reads them from ARGV, which is
# not escape-processed (unlike -v), and exits before treating any of them as a file.
json_strings() {
	LC_ALL=C awk -- 'BEGIN {
		for (i = 1; i < 32; i++) esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
		esc["\t"] = "\\t"; esc["\n"] = "\\n"; esc["\r"] = "\\r"
		esc["\\"] = "\\\\"; esc["\""] = "\\\""
		out = ""
		for (a = 1; a < ARGC; a++) {
			s = ARGV[a]; t = ""; n = length(s)
			for (i = 1; i <= n; i++) {
				c = substr(s, i, 1)
				t = t ((c in esc) ? esc[c] : c)
			}
			out = out (a > 1 ? ", " : "") "\"" t "\""
		}
		print out
		exit
	}' "$@"
}

# BASE64 -> B64_VALUE (trailing newlines kept), or fail naming line_no.
decode_b64() {
	# printf is a builtin: the value travels through a pipe, never through an argv.
	# The trailing dot keeps trailing newlines of the value and proves base64 succeeded.
	B64_VALUE=$(printf '%s' "$1" | base64 -d 2>/dev/null && printf .)
	case $B64_VALUE in
	*.) B64_VALUE=${B64_VALUE%.} ;;
	*) fail "$E_BAD_SECRET" bad_secret "$line_no" "value is not base64" ;;
	esac
}

# The launch input on stdin, as the daemon writes it (contract.launch_stdin; launch.sh's
# header says every line; tests/remote/test_launch_input.py keeps the two sides equal).
# Secrets (`NAME<TAB>BASE64VALUE` lines) are validated and decoded now into secret_count
# pairs, exported only by export_secrets in the subshell that starts the run. With
# `options`, the `+` lines set env_count pairs, setup, attempt, wrapper, meta_extra and
# limits; with `secrets`, a `+` line is refused. A `+go` line ends the input (launch_go=1;
# launch.sh --ahead launches nothing without it).
read_launch_input() {
	secret_count=0
	line_no=0
	launch_go=
	if [ "$1" = options ]; then
		env_count=0
		setup=
		attempt=1
		wrapper=0
		meta_extra=
		limits=
	fi
	while IFS= read -r secret_line || [ -n "$secret_line" ]; do
		line_no=$((line_no + 1))
		if [ -z "$secret_line" ]; then
			continue
		fi
		case $secret_line in
		'+go')
			launch_go=1
			break
			;;
		'+'*)
			[ "$1" = options ] || fail "$E_BAD_SECRET" bad_secret "$line_no" "unknown option line"
			launch_option "$secret_line"
			continue
			;;
		*"$TAB"*) ;;
		*) fail "$E_BAD_SECRET" bad_secret "$line_no" "expected NAME<TAB>BASE64VALUE" ;;
		esac
		secret_name=${secret_line%%"$TAB"*}
		secret_b64=${secret_line#*"$TAB"}
		secret_line=
		case $secret_name in
		'' | [!A-Za-z_]* | *[!A-Za-z0-9_]*) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad name" ;;
		RTRAIN_*) fail "$E_BAD_SECRET" bad_secret "$line_no" "RTRAIN_ names are reserved" ;;
		esac
		decode_b64 "$secret_b64"
		secret_count=$((secret_count + 1))
		eval "secret_name_$secret_count=\$secret_name secret_value_$secret_count=\$B64_VALUE"
		B64_VALUE=
		secret_b64=
	done
}

# One `+` line of the launch input (read_launch_input options).
launch_option() {
	case $1 in
	"+env$TAB"*"$TAB"*)
		opt=${1#+env"$TAB"}
		opt_name=${opt%%"$TAB"*}
		case $opt_name in
		'' | [!A-Za-z_]* | *[!A-Za-z0-9_]* | RTRAIN_RUN_ID) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad name" ;;
		esac
		decode_b64 "${opt#*"$TAB"}"
		env_count=$((env_count + 1))
		eval "env_name_$env_count=\$opt_name env_value_$env_count=\$B64_VALUE"
		;;
	"+setup$TAB"*)
		decode_b64 "${1#+setup"$TAB"}"
		setup=$B64_VALUE
		;;
	"+meta$TAB"*"$TAB"*)
		opt=${1#+meta"$TAB"}
		opt_name=${opt%%"$TAB"*}
		case $opt_name in
		'' | *[!a-z_]*) fail "$E_BAD_SECRET" bad_secret "$line_no" "bad meta key" ;;
		esac
		decode_b64 "${opt#*"$TAB"}"
		case $B64_VALUE in
		*"$NL"*) fail "$E_BAD_SECRET" bad_secret "$line_no" "meta value is not one line" ;;
		esac
		meta_extra="$meta_extra  \"$opt_name\": $B64_VALUE,$NL"
		;;
	"+attempt$TAB"*)
		attempt=${1#+attempt"$TAB"}
		if ! { is_uint "$attempt" && [ "${#attempt}" -le 6 ] && [ "$attempt" -ge 1 ]; }; then
			fail "$E_USAGE" usage "bad attempt"
		fi
		;;
	"+limits$TAB"*"$TAB"*"$TAB"*"$TAB"*)
		opt=${1#+limits"$TAB"}
		IFS=$TAB read -r lim_max lim_stall lim_on lim_grace <<EOF
$opt
EOF
		for lim_number in "$lim_max" "$lim_stall"; do
			if ! { is_uint "$lim_number" && [ "${#lim_number}" -le 9 ]; }; then
				fail "$E_USAGE" usage "bad limits"
			fi
		done
		case $lim_on in
		flag | stop) ;;
		*) fail "$E_USAGE" usage "bad limits" ;;
		esac
		case $lim_grace in
		'' | . | *[!0-9.]* | *.*.*) fail "$E_USAGE" usage "bad limits" ;;
		esac
		if [ "$lim_max" != 0 ] || [ "$lim_stall" != 0 ]; then
			limits="$lim_max $lim_stall $lim_on $lim_grace"
		fi
		;;
	"+wrapper$TAB"*)
		wrapper=${1#+wrapper"$TAB"}
		if ! { is_uint "$wrapper" && [ "${#wrapper}" -le 3 ]; }; then
			fail "$E_USAGE" usage "bad wrapper"
		fi
		;;
	*) fail "$E_BAD_SECRET" bad_secret "$line_no" "unknown option line" ;;
	esac
}

# Secrets only (a scheduler's submit: the daemon keeps the `+` lines for the batch script).
read_secrets() {
	read_launch_input secrets
}

# Export what read_secrets decoded; call it only in the subshell that starts the run.
export_secrets() {
	es_i=1
	while [ "$es_i" -le "$secret_count" ]; do
		eval "export \"\$secret_name_$es_i=\$secret_value_$es_i\""
		es_i=$((es_i + 1))
	done
}
