#!/bin/sh
# The device layer under valgrind memcheck: data paths, notifications,
# triggered descriptors and error paths (forked nodes run under valgrind too),
# then the paths that carry virtual-time stamps again with TCA_TIMING=virtual
# (notifications, chains, counters, triggers: what those tests check holds
# in virtual time too; the VirtualTime.* tests themselves measure CPU time,
# which valgrind inflates 50x).
# Any memcheck error makes a node exit 99, which fails its test.
memcheck() {
    timeout 900 ./libtool --mode=execute valgrind --quiet --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --suppressions="${srcdir:-.}/test/valgrind.supp" \
        ./tca_device_tests --gtest_filter="$1"
}
memcheck 'DataPath.Chain*:DataPath.BlockStride:DataPath.SelfNotify*:Notify.ManyTags*:Notify.TestVariants*:Counters.*:Offload.*:Errors.DescriptorValidation:Errors.BusyChannel*:ChannelReuse.EmptyChains*:NotifyStreams.TagLimit*:Errors.StaleHandle*:Errors.JobKeyInUse:Lifecycle.NoSegments*:HostileInput.EveryEntryPoint*:HostileInput.ZeroSize*:SharedHeap.InteriorPointer*:SharedHeap.SizeZero*' ||
    exit $?
TCA_TIMING=virtual memcheck 'DataPath.Chain*:DataPath.SelfNotify*:Notify.ManyTags*:Notify.TestVariants*:Counters.*:Offload.*'
