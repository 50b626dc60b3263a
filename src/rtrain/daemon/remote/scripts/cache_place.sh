# rtrain-needs: cache
# cache_place.sh WORKDIR RUN_DIR: stdin holds one line `SHA256<TAB>SIZE<TAB>NAME` per input.
# Each input the work directory's cache holds (same sha256 and size), provably unchanged, is
# placed in the run directory as NAME, owned by the run (`placed NAME copied`: a reflink
# where the filesystem makes one, else a copy; never a link to the entry, so that no run can
# change the cache); each other one is `missing NAME`, followed by a `piece NAME OFFSET
# LENGTH` for each piece of it a cut upload left verified. One python3 does all of them
# (cache_inputs.py: an entry whose identity moved since it was verified is hashed again, and
# removed when it is not its sha256 any more); without python3, each entry is hashed.
need_args "$#" 2
workdir=$(expand_workdir "$1") || fail "$E_USAGE" bad_workdir
run_dir=$(expand_workdir "$2") || fail "$E_USAGE" bad_dest
[ -d "$run_dir" ] || fail "$E_NOT_FOUND" run_not_found
cache_dirs "$workdir"
# daemon/remote/cache_inputs.py: the daemon puts its text in place of the word below.
CACHE_PROGRAM='@cache_inputs.py@'
place_listed "$run_dir"
