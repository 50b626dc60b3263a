"""The fake `nvidia-smi` installed on the GPU test user's PATH.

It reports N identical H100s, N read from a file in the user's home so a test can change it,
and prints what the real tool prints for the invocations rtrain relies on. It is a bash script
so it needs no interpreter on the far side beyond the login shell.

Load: a process of the user with `RTRAIN_FAKE_GPU_LOAD=INDEX:UTIL:MEM_MIB[,...]` in its
environment (a test's trainer, started under `env`) computes on those GPUs: they report that
utilization and memory, and `--query-compute-apps` lists the process. `NA` or `NS` as a value
is answered `[N/A]` or `[Not Supported]`, as the real tool does for what it cannot read (in
containers, on some boards). GPU 1 and up report `power.draw` as `[N/A]`. While
`NO_APPS_FILE` exists, `--query-compute-apps` lists no process at all, as inside containers.
"""

DEFAULT_GPU_COUNT = 2

# Where the script reads the GPU count, relative to the user's home.
GPU_COUNT_FILE = ".test-hosts/gpu-count"
# While this file exists (relative to the home), `--query-compute-apps` lists no process, as
# nvidia-smi inside many containers does.
NO_APPS_FILE = ".test-hosts/no-compute-apps"

SCRIPT = r"""#!/bin/bash
# Fake nvidia-smi written by the rtrain test suite (tests/hosts). It reports N identical GPUs,
# N read from ~/.test-hosts/gpu-count, with the real tool's output formats and exit codes
# (2: bad arguments, 6: no devices).
set -u
count=__DEFAULT_COUNT__
if [ -r "$HOME/__COUNT_FILE__" ]; then
    count=$(tr -cd '0-9' <"$HOME/__COUNT_FILE__")
    count=${count:-0}
fi
model="NVIDIA H100 80GB HBM3"
mem_total=81559
driver=550.54.15
cuda=12.4

bad_arguments() {
    echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
    exit 2
}

gpu_uuid() { printf 'GPU-3f1c9a52-7d04-4e8b-b1a6-%012d' "$1"; }
bus_id() { printf '00000000:%02X:00.0' $((24 + 16 * $1)); }

is_field() {
    case $1 in
        index | name | uuid | pci.bus_id | driver_version | count | memory.total | memory.used | \
            memory.free | utilization.gpu | temperature.gpu | power.draw) return 0 ;;
    esac
    return 1
}

is_app_field() {
    case $1 in
        pid | gpu_uuid | used_memory | process_name) return 0 ;;
    esac
    return 1
}

# "PID INDEX UTIL MEM" per RTRAIN_FAKE_GPU_LOAD entry of the user's processes, once.
loads=""
loads_read=0
read_loads() {
    [ "$loads_read" = 1 ] && return
    loads_read=1
    local hit pid spec entry i u m
    while IFS= read -r -d '' hit; do
        pid=${hit#/proc/}
        pid=${pid%%/*}
        spec=${hit#*:RTRAIN_FAKE_GPU_LOAD=}
        for entry in ${spec//,/ }; do
            IFS=: read -r i u m <<<"$entry"
            loads+="$pid $i ${u:-0} ${m:-0}"$'\n'
        done
    done < <(grep -zsH '^RTRAIN_FAKE_GPU_LOAD=' /proc/[0-9]*/environ 2>/dev/null)
}

# A load value as the real tool prints it: NA and NS are what it cannot read.
shown_value() {
    case $1 in
        NA) printf '[N/A]' ;;
        NS) printf '[Not Supported]' ;;
        *) printf '%s' "$1" ;;
    esac
}

# $1 gpu index, $2 column of the load (3 utilization, 4 memory): the first process's value
# on that GPU (NA/NS as given), else 0.
load_of() {
    read_loads
    local pid i u m
    while read -r pid i u m; do
        [ -n "$pid" ] && [ "$i" = "$1" ] || continue
        if [ "$2" = 3 ]; then printf '%s' "$u"; else printf '%s' "$m"; fi
        return
    done <<<"$loads"
    printf '0'
}

# $1 field, $2 gpu index, $3 1 when units are left out
field_value() {
    local unit=""
    case $1 in
        index) printf '%s' "$2" ;;
        name) printf '%s' "$model" ;;
        uuid) gpu_uuid "$2" ;;
        pci.bus_id) bus_id "$2" ;;
        driver_version) printf '%s' "$driver" ;;
        count) printf '%s' "$count" ;;
        memory.total | memory.free) printf '%s' "$mem_total"; unit=" MiB" ;;
        memory.used) value=$(load_of "$2" 4); shown_value "$value"; unit=" MiB" ;;
        utilization.gpu) value=$(load_of "$2" 3); shown_value "$value"; unit=" %" ;;
        temperature.gpu) printf '31' ;;
        power.draw)
            if [ "$2" = 0 ]; then printf '69.88'; unit=" W"; else value=NA; shown_value NA; fi
            ;;
    esac
    case ${value-} in NA | NS) unit="" ;; esac
    value=""
    [ "$3" = 1 ] || printf '%s' "$unit"
}

# One line per process with a load, the fields asked for; none at all where the file
# ~/__NO_APPS_FILE__ exists, as inside many containers.
print_apps() {
    [ -e "$HOME/__NO_APPS_FILE__" ] && return 0
    read_loads
    local pid i u m line field name
    while read -r pid i u m; do
        [ -n "$pid" ] && [ "$i" -lt "$count" ] || continue
        name=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1)
        line=""
        for field in "${fields[@]}"; do
            case $field in
                pid) line+="${line:+, }$pid" ;;
                gpu_uuid) line+="${line:+, }$(gpu_uuid "$i")" ;;
                used_memory)
                    line+="${line:+, }$(shown_value "$m")"
                    case $m in NA | NS) ;; *) [ "$nounits" = 1 ] || line+=" MiB" ;; esac
                    ;;
                process_name) line+="${line:+, }${name:-[Not Found]}" ;;
            esac
        done
        echo "$line"
    done <<<"$loads"
}

field_header() {
    case $1 in
        memory.*) printf '%s [MiB]' "$1" ;;
        utilization.gpu) printf '%s [%%]' "$1" ;;
        power.draw) printf '%s [W]' "$1" ;;
        *) printf '%s' "$1" ;;
    esac
}

print_help() {
    echo "NVIDIA System Management Interface -- v$driver"
    echo
    echo "    -L,   --list-gpus           Display a list of GPUs connected to the system."
    echo "    --query-gpu=                Information about GPU."
    echo "    --format=                   csv, noheader, nounits."
    echo "    -h,   --help                Print usage information and exit."
}

# $1 repeated $2 times
repeat() {
    local out
    printf -v out '%*s' "$2" ''
    printf '%s' "${out// /$1}"
}

print_table() {
    local i d41 d24 d22
    d41=$(repeat - 41) d24=$(repeat - 24) d22=$(repeat - 22)
    echo "+$(repeat - 89)+"
    local banner
    printf -v banner 'NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %s' \
        "$driver" "$driver" "$cuda"
    printf '| %-87s |\n' "$banner"
    echo "|$d41+$d24+$d22+"
    printf '|%s|%s|%s|\n' " GPU  Name                 Persistence-M " " Bus-Id          Disp.A " \
        " Volatile Uncorr. ECC "
    printf '|%s|%s|%s|\n' " Fan  Temp   Perf          Pwr:Usage/Cap " "           Memory-Usage " \
        " GPU-Util  Compute M. "
    echo "|$(repeat = 41)+$(repeat = 24)+$(repeat = 22)|"
    for ((i = 0; i < count; i++)); do
        printf '| %3d  %-30s On  | %18s Off | %20s |\n' "$i" "$model" "$(bus_id "$i")" 0
        printf '| N/A   31C    P0             70W /  700W | %9s / %10s | %7s      Default |\n' \
            "0MiB" "${mem_total}MiB" "0%"
        echo "+$d41+$d24+$d22+"
    done
    echo
    echo "+$(repeat - 89)+"
    printf '| %-87s |\n' "Processes:" \
        " GPU   GI   CI        PID   Type   Process name                              GPU Memory"
    echo "|$(repeat = 89)|"
    printf '| %-87s |\n' " No running processes found"
    echo "+$(repeat - 89)+"
}

query="" format="" list=0 query_given=0 format_given=0 apps=0 value=""
while [ $# -gt 0 ]; do
    case $1 in
        --query-gpu=*) query=${1#--query-gpu=}; query_given=1 ;;
        --query-compute-apps=*) query=${1#--query-compute-apps=}; query_given=1; apps=1 ;;
        --format=*) format=${1#--format=}; format_given=1 ;;
        -L | --list-gpus) list=1 ;;
        -h | --help) print_help; exit 0 ;;
        *) bad_arguments ;;
    esac
    shift
done

if [ "$query_given" = 1 ] || [ "$format_given" = 1 ]; then
    { [ "$query_given" = 1 ] && [ "$format_given" = 1 ] && [ "$list" = 0 ]; } || bad_arguments
    csv=0 header=1 nounits=0
    IFS=, read -r -a options <<<"$format"
    for option in "${options[@]}"; do
        option=${option// /}
        case $option in
            csv) csv=1 ;;
            noheader) header=0 ;;
            nounits) nounits=1 ;;
            *) bad_arguments ;;
        esac
    done
    [ "$csv" = 1 ] || bad_arguments
    IFS=, read -r -a fields <<<"$query"
    [ "${#fields[@]}" -gt 0 ] || bad_arguments
    for ((f = 0; f < ${#fields[@]}; f++)); do
        fields[f]=${fields[f]// /}
        if { [ "$apps" = 0 ] && ! is_field "${fields[f]}"; } ||
            { [ "$apps" = 1 ] && ! is_app_field "${fields[f]}"; }; then
            printf 'Field "%s" is not a valid field to query.\n\n' "${fields[f]}"
            exit 2
        fi
    done
fi

if [ "$count" -eq 0 ]; then
    echo "No devices were found"
    exit 6
fi

if [ "$list" = 1 ]; then
    for ((i = 0; i < count; i++)); do
        echo "GPU $i: $model (UUID: $(gpu_uuid "$i"))"
    done
elif [ "$apps" = 1 ]; then
    if [ "$header" = 1 ]; then
        line=""
        for field in "${fields[@]}"; do
            case $field in used_memory) field="used_gpu_memory [MiB]" ;; esac
            line+="${line:+, }$field"
        done
        echo "$line"
    fi
    print_apps
elif [ "$query_given" = 1 ]; then
    if [ "$header" = 1 ]; then
        line=""
        for field in "${fields[@]}"; do line+="${line:+, }$(field_header "$field")"; done
        echo "$line"
    fi
    for ((i = 0; i < count; i++)); do
        line=""
        for field in "${fields[@]}"; do
            line+="${line:+, }$(field_value "$field" "$i" "$nounits")"
        done
        echo "$line"
    done
else
    print_table
fi
"""


def render_script() -> str:
    """The script text with the count file and default filled in."""
    return (
        SCRIPT.replace("__COUNT_FILE__", GPU_COUNT_FILE)
        .replace("__NO_APPS_FILE__", NO_APPS_FILE)
        .replace("__DEFAULT_COUNT__", str(DEFAULT_GPU_COUNT))
    )
