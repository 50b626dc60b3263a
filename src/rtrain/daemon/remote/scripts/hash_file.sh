# rtrain-needs: run_paths hashing
# hash_file.sh RUN_DIR REL: `file<TAB>SIZE<TAB>SHA256` of one file of the run, after send.sh's
# path checks. The console transport, which fetches in chunks, checks the whole file with it.
need_args "$#" 2
run_file "$1" "$2"
sha=$(sha256_of "$REAL_PATH") || fail "$E_IO" unreadable "$(flat "$2")"
size=$(size_of "$REAL_PATH") || fail "$E_IO" unreadable "$(flat "$2")"
emit file "$size" "$sha"
