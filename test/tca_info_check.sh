#!/bin/sh
# tca_info_check.sh - what tca_info tells a user about the device: the
# backend, the model of a sub-cluster without a device (-n, -s), the
# locality hwloc finds (tools/locality.cpp), the timing model's mode, and
# every setting with its value and where it came from (-S), a bad value
# refused by name.
status=0
fail() { echo "FAIL: $*"; status=1; }
out=$(./tca_info 2>&1) || fail "tca_info exited $?: $out"
echo "$out" | grep -q '^#   device           : loopback$' || fail "no loopback backend line"
# Locality: this host's name and core count as hwloc reports them, and the
# CPUs this process may run on (what taskset would show).
echo "$out" | grep -q "^#   host             : $(hostname), [1-9][0-9]* cores, [1-9][0-9]* NUMA node(s)$" ||
    fail "no locality line for host $(hostname): $(echo "$out" | grep 'host  ')"
echo "$out" | grep -q '^#   bound to CPUs    : [0-9]' || fail "no CPU binding line"
echo "$out" | grep -q '^#   GPUs             : ' || fail "no GPU line"
model=$(./tca_info -n 4 -s) || fail "tca_info -n 4 -s exited $?"
echo "$model" | grep -q '^#   nodes            : 4 (two rings joined by S links)$' || fail "no 4-node S-link model"
./tca_info -n 3 -s >/dev/null 2>&1 && fail "an odd count with S links was accepted"
# Settings: a value from the environment is named as such, the rest default.
set=$(TCA_SPIN_NS=1234 ./tca_info -S) || fail "tca_info -S exited $?"
echo "$set" | grep -Eq '^#   TCA_SPIN_NS +spin_ns +1234 +TCA_SPIN_NS$' || fail "TCA_SPIN_NS=1234 not shown as from TCA_SPIN_NS"
echo "$set" | grep -Eq '^#   TCA_TIMEOUT_MS +timeout_ms +[0-9]+ +default$' || fail "timeout_ms not at its default"
# The timing model's mode, as TCA_TIMING sets it.
for m in 0:off 1:'real time' virtual:'virtual time'; do
    v=${m%%:*} says=${m#*:}
    TCA_TIMING=$v ./tca_info 2>&1 | grep -q "^#   mode  *: TCA_TIMING=$v: $says" ||
        fail "TCA_TIMING=$v: no mode line saying '$says'"
done
bad=$(TCA_SPIN_NS=abc ./tca_info 2>&1) && fail "TCA_SPIN_NS=abc was accepted"
echo "$bad" | grep -q "TCA_SPIN_NS='abc' is invalid" || fail "the refusal does not name TCA_SPIN_NS: $bad"
[ $status -eq 0 ] && echo "PASS: tca_info describes the backend, the model, the locality and the settings"
exit $status
