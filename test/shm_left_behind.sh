#!/bin/sh
# shm_left_behind.sh BEFORE - prints the TCA segments in /dev/shm that a run
# left behind: not in BEFORE (a file listing the names present when the run
# started), mapped by no live process (other people's tests running at the
# same time map theirs; matched by inode, which no rename changes) and
# still there after up to 5 s (the
# launcher's cleanup of an aborted job runs asynchronously).  Exit status 1 if
# there are any.
before=$1
candidates() {
    for f in $(ls /dev/shm 2>/dev/null | grep '^tca-'); do
        grep -qxF "$f" "$before" 2>/dev/null && continue
        ino=$(stat -c %i "/dev/shm/$f" 2>/dev/null) || continue
        grep -qsE " $ino +/dev/shm/" /proc/[0-9]*/maps && continue
        echo "$f"
    done
}
tries=0
left=$(candidates)
while [ -n "$left" ] && [ $tries -lt 5 ]; do
    sleep 1
    tries=$((tries + 1))
    left=$(candidates)
done
[ -z "$left" ] && exit 0
echo "$left"
exit 1
