# free_port.sh PYTHON: `port N`, a TCP port free on this host now (the kernel's pick), for
# the c10d rendezvous of a run across hosts that this host leads. Chosen with the run's own
# python (the one tool a training host surely has), then let go: torchrun binds it next.
need_args "$#" 1
# shellcheck disable=SC2088 # the word as typed: expand_workdir expands it
case $1 in
'~/'*) fp_python=$(expand_workdir "$1") || fail "$E_USAGE" bad_python ;;
*) fp_python=$1 ;;
esac
fp_port=$("$fp_python" -c 'import socket
s = socket.socket()
s.bind(("", 0))
print(s.getsockname()[1])' 2>/dev/null) || fail "$E_NOT_FOUND" no_python
is_uint "$fp_port" || fail "$E_IO" no_port
emit port "$fp_port"
exit 0
