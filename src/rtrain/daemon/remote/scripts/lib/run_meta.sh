# A run's meta.json, as launch.sh wrote it, and whether the host rebooted since.
BOOT_NOW=
META_STARTED='' META_BOOT='' META_ATTEMPT=''

# meta.json -> META_STARTED META_BOOT META_ATTEMPT. launch.sh writes one key per line, so no
# JSON parser is needed here.
read_meta() {
	META_STARTED='' META_BOOT='' META_ATTEMPT=''
	rm_file=$1/.rtrain/meta.json
	[ -f "$rm_file" ] || rm_file=$1/meta.json
	[ -f "$rm_file" ] || return 0
	while IFS= read -r rm_line || [ -n "$rm_line" ]; do
		case $rm_line in
		'  "started_at": '*)
			rm_value=${rm_line#'  "started_at": '}
			rm_value=${rm_value%%,*}
			is_uint "$rm_value" && META_STARTED=$rm_value
			;;
		'  "attempt": '*)
			rm_value=${rm_line#'  "attempt": '}
			rm_value=${rm_value%%,*}
			is_uint "$rm_value" && META_ATTEMPT=$rm_value
			;;
		'  "boot_id": "'*)
			rm_value=${rm_line#'  "boot_id": "'}
			META_BOOT=${rm_value%%\"*}
			;;
		esac
		rm_line=
	done <"$rm_file"
}

# True when meta.json names a boot other than the current one (the host rebooted).
rebooted_since_start() {
	[ -z "$BOOT_NOW" ] && BOOT_NOW=$(boot_id)
	[ -n "$META_BOOT" ] && [ -n "$BOOT_NOW" ] && [ "$META_BOOT" != "$BOOT_NOW" ]
}
