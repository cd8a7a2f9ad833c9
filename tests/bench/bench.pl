#!/usr/bin/perl
# Hot loops of the benchmark, one process each (shell loops are too slow
# under TCG to measure a filesystem with):
#   bench.pl create DIR N      create N files of 4 KiB in DIR (made here)
#   bench.pl stat DIR N        stat them
#   bench.pl unlink DIR N      unlink them and rmdir DIR
#   bench.pl rand FILE N       N random 4 KiB preads from FILE (fixed seed)
#   bench.pl par DIR N SYNC    one parallel worker: create+write N files,
#                              stat, read back, unlink; then rmdir DIR.
#                              Start barrier: writes SYNC.ready, waits for
#                              SYNC.go; then writes "start end" (epoch s) to SYNC
# If $BENCH_EP names a file, the loop's own elapsed seconds go there (so
# perl's start-up, slow under TCG, is not part of the measurement).
use strict;
use warnings;
use Fcntl qw(O_RDONLY O_WRONLY O_CREAT O_TRUNC SEEK_SET);
use Time::HiRes qw(time sleep);

my ($cmd, $path, $n) = @ARGV;
die "usage: bench.pl create|stat|unlink|rand|par PATH N\n" unless defined $n;
my $block = 'x' x 4096;

sub create_all {
	my ($dir) = @_;
	mkdir $dir or die "mkdir $dir: $!\n";
	for my $i (1 .. $n) {
		sysopen(my $fh, "$dir/f$i", O_WRONLY | O_CREAT | O_TRUNC, 0644)
			or die "create $dir/f$i: $!\n";
		syswrite($fh, $block) == 4096 or die "write $dir/f$i: $!\n";
		close $fh or die "close $dir/f$i: $!\n";
	}
}
sub stat_all {
	my ($dir) = @_;
	for my $i (1 .. $n) {
		my @st = stat "$dir/f$i" or die "stat $dir/f$i: $!\n";
		$st[7] == 4096 or die "$dir/f$i: size $st[7]\n";
	}
}
sub read_all {
	my ($dir) = @_;
	my $buf;
	for my $i (1 .. $n) {
		sysopen(my $fh, "$dir/f$i", O_RDONLY) or die "open $dir/f$i: $!\n";
		sysread($fh, $buf, 8192) == 4096 or die "read $dir/f$i: short\n";
		close $fh;
	}
}
sub unlink_all {
	my ($dir) = @_;
	for my $i (1 .. $n) {
		unlink "$dir/f$i" or die "unlink $dir/f$i: $!\n";
	}
	rmdir $dir or die "rmdir $dir: $!\n";
}

my $t0 = time;
if ($cmd eq 'create') {
	create_all($path);
} elsif ($cmd eq 'stat') {
	stat_all($path);
} elsif ($cmd eq 'unlink') {
	unlink_all($path);
} elsif ($cmd eq 'par') {
	my $sync = $ARGV[3] or die "par: no SYNC path\n";
	open(my $r, '>', "$sync.ready") or die "$sync.ready: $!\n";
	close $r;
	sleep 0.005 until -e "$sync.go";
	$t0 = time;
	create_all($path);
	stat_all($path);
	read_all($path);
	unlink_all($path);
	open(my $w, '>', $sync) or die "$sync: $!\n";
	printf $w "%.6f %.6f\n", $t0, time;
	close $w;
} elsif ($cmd eq 'rand') {
	sysopen(my $fh, $path, O_RDONLY) or die "open $path: $!\n";
	my $blocks = int((-s $fh) / 4096);
	die "$path: too small\n" unless $blocks > 0;
	srand(42);
	my $buf;
	for (1 .. $n) {
		my $off = int(rand($blocks)) * 4096;
		sysseek($fh, $off, SEEK_SET) or die "seek: $!\n";
		sysread($fh, $buf, 4096) == 4096 or die "read at $off: short\n";
	}
	close $fh;
} else {
	die "bench.pl: unknown command $cmd\n";
}
if ($ENV{BENCH_EP}) {
	open(my $fh, '>', $ENV{BENCH_EP}) or die "$ENV{BENCH_EP}: $!\n";
	printf $fh "%.6f\n", time - $t0;
	close $fh;
}
