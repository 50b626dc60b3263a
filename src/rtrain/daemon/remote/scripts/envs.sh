# envs.sh WORKDIR MODE: the run environments cached in WORKDIR/.cache/envs (rtrain-env,
# env_build.py, builds them; each is KEY/, renamed there only once complete).
#   list: one `env KEY KIB LAST_USED BUILT_AT BUILD_SECONDS TOOL PYTHON RUNS` line each (times
#         in epoch seconds, `-` where unknown; RUNS: the run ids whose `rtrain-venv` links to
#         it, comma-separated, `-` for none), and `building KEY PID` for each build under way.
#   gc:   removes each environment no run directory links to, and builds whose builder is
#         gone; `freed KIB ENVIRONMENTS`.
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
mode=$2
case $mode in
list | gc) ;;
*) fail "$E_USAGE" usage "mode must be list or gc" ;;
esac
envs=${workdir%/}/.cache/envs
freed=0 removed=0

# ENTRY -> EU_RUNS: the run ids linking to it (comma-separated), empty for none.
env_users() {
	EU_RUNS=
	for eu_link in "${workdir%/}"/*/rtrain-venv; do
		[ -L "$eu_link" ] || continue
		[ "$(readlink -- "$eu_link" 2>/dev/null)" = "$1" ] || continue
		eu_run=${eu_link%/rtrain-venv}
		EU_RUNS=${EU_RUNS:+$EU_RUNS,}${eu_run##*/}
	done
}

# ENTRY NAME -> the value of NAME in its .rtrain-env, else `-`.
about() {
	ab_value=-
	if [ -f "$1/.rtrain-env" ]; then
		while IFS=' ' read -r ab_name ab_rest; do
			[ "$ab_name" = "$2" ] && ab_value=$ab_rest
		done <"$1/.rtrain-env"
	fi
	printf '%s' "${ab_value:--}"
}

if [ -d "$envs" ]; then
	for entry in "$envs"/* "$envs"/.build-*; do
		[ -d "$entry" ] || continue
		name=${entry##*/}
		case $name in
		.build-*)
			pid=${name##*-}
			key=${name#.build-}
			key=${key%-*}
			is_uint "$pid" || continue
			if kill -0 "$pid" 2>/dev/null; then
				[ "$mode" = list ] && emit building "$key" "$pid"
			elif [ "$mode" = gc ]; then
				rm -rf -- "$entry"
			fi
			continue
			;;
		esac
		env_users "$entry"
		kib=$(du -sk -- "$entry" 2>/dev/null | cut -f 1)
		is_uint "$kib" || kib=0
		if [ "$mode" = list ]; then
			used=-
			[ -f "$entry/.rtrain-last-used" ] && IFS= read -r used <"$entry/.rtrain-last-used"
			is_uint "$used" || used=-
			emit env "$name" "$kib" "$used" "$(about "$entry" built_at)" \
				"$(about "$entry" build_seconds)" "$(about "$entry" tool)" \
				"$(about "$entry" python)" "${EU_RUNS:--}"
		elif [ -z "$EU_RUNS" ]; then
			# Out of its key's place first, so no run ever finds a half-removed environment.
			gone=$envs/.gone-$name-$$
			mv -- "$entry" "$gone" 2>/dev/null || continue
			rm -rf -- "$gone"
			freed=$((freed + kib))
			removed=$((removed + 1))
		fi
	done
fi
[ "$mode" = gc ] && emit freed "$freed" "$removed"
exit 0
