# lease.sh WORKDIR TOKEN SECONDS: the daemon's lease on the host while it moves files to or
# from it, so the guard (guard_loop.sh) counts the host as busy. SECONDS > 0 takes or renews
# the lease until the host's clock reads now + SECONDS (`lease TOKEN EXPIRES NOW`); 0 drops
# it (`dropped TOKEN`). A lease never renewed (a killed daemon) expires by itself. Leases
# long expired are swept on the way.
need_args "$#" 3
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
token=$2
seconds=$3
valid_run_id "$token" || fail "$E_USAGE" bad_token
{ is_uint "$seconds" && [ "${#seconds}" -le 6 ]; } || fail "$E_USAGE" usage
dir=$workdir/.leases
now=$(date +%s)
if [ "$seconds" -eq 0 ]; then
	rm -f -- "$dir/$token"
	emit dropped "$token"
else
	# shellcheck disable=SC2174 # private: the workdir itself; its parents are the user's own
	{ mkdir -p -m 700 -- "$workdir" 2>/dev/null && mkdir -p -- "$dir" 2>/dev/null; } ||
		fail "$E_WRITE" mkdir "$dir"
	expires=$((now + seconds))
	# tmp + mv: the guard never reads half a lease.
	{ printf '%s\n' "$expires" >"$dir/$token.tmp" && mv -f -- "$dir/$token.tmp" "$dir/$token"; } \
		2>/dev/null || fail "$E_WRITE" write "$dir"
	emit lease "$token" "$expires" "$now"
fi
# An hour past its expiry a lease is nobody's: its daemon died without dropping it.
set +f
for old in "$dir"/*; do
	[ -f "$old" ] || continue
	old_until=
	{ IFS= read -r old_until <"$old"; } 2>/dev/null
	is_uint "$old_until" && [ "$old_until" -lt $((now - 3600)) ] && rm -f -- "$old"
done
exit 0
