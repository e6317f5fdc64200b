// HeapLookup: a JVM with a large heap of small objects, lookup- and GC-heavy.
//
//   java [-XX:+UseTransparentHugePages] -Xms.. -Xmx.. HeapLookup N
//
// Builds a HashMap<Long, Item> of N entries (a Long, a map node and an Item
// per key: three small objects), prints "ready", then forever looks up
// random keys, checks each Item against its key, and replaces every tenth
// one with a new Item of the same content (garbage for the GC, the data set
// unchanged). Once a second it prints
//   stat EPOCH_S OPS P99_US MAX_US ERRORS
// with OPS the lookups per second over that second and the latency of one lookup from a
// histogram (8 buckets per power of two, so a percentile is within 12.5%).
// SIGTERM: checks every entry, prints "verify N errors E", exits.
import java.util.HashMap;
import java.util.SplittableRandom;

public final class HeapLookup {
	static final class Item {
		final long key;
		final long a;
		final int b;

		Item(long key) {
			this.key = key;
			this.a = key * 0x9E3779B97F4A7C15L;
			this.b = (int) (key ^ (key >>> 17));
		}

		boolean matches(long k) {
			return key == k && a == k * 0x9E3779B97F4A7C15L && b == (int) (k ^ (k >>> 17));
		}
	}

	static volatile boolean stop;

	static int bucket(long ns) {
		if (ns < 8)
			return (int) Math.max(ns, 0);
		int e = 63 - Long.numberOfLeadingZeros(ns);
		return (e - 2) * 8 + (int) ((ns >>> (e - 3)) & 7);
	}

	static long bucketUpper(int b) {
		if (b < 8)
			return b + 1;
		int e = b / 8 + 2;
		long sub = b % 8;
		return (8 + sub + 1) << (e - 3);
	}

	public static void main(String[] args) throws Exception {
		final int n = Integer.parseInt(args[0]);
		final HashMap<Long, Item> map = new HashMap<>(n * 2);
		for (long k = 0; k < n; k++)
			map.put(k, new Item(k));
		final Thread main = Thread.currentThread();
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			stop = true;
			try {
				main.join(5000);
			} catch (InterruptedException e) {
			}
			long errors = 0;
			for (long k = 0; k < n; k++) {
				Item it = map.get(k);
				if (it == null || !it.matches(k))
					errors++;
			}
			System.out.println("verify " + n + " errors " + errors);
			System.out.flush();
		}));
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();

		final SplittableRandom rnd = new SplittableRandom(42);
		final long[] hist = new long[8 * 64];
		long errors = 0, ops = 0, max = 0;
		long last = System.nanoTime(), next = last + 1_000_000_000L;
		while (!stop) {
			for (int i = 0; i < 1024; i++) {
				long k = rnd.nextLong(n);
				long t0 = System.nanoTime();
				Item it = map.get(k);
				if (it == null || !it.matches(k))
					errors++;
				else if (rnd.nextInt(10) == 0)
					map.put(k, new Item(k));
				long d = System.nanoTime() - t0;
				hist[bucket(d)]++;
				if (d > max)
					max = d;
				ops++;
			}
			long now = System.nanoTime();
			if (now >= next) {
				long want = (ops * 99 + 99) / 100, seen = 0;
				int b = 0;
				for (; b < hist.length - 1; b++) {
					seen += hist[b];
					if (seen >= want)
						break;
				}
				System.out.printf("stat %.3f %.0f %.1f %.1f %d%n", System.currentTimeMillis() / 1000.0,
						ops * 1e9 / (now - last), bucketUpper(b) / 1000.0, max / 1000.0, errors);
				System.out.flush();
				java.util.Arrays.fill(hist, 0);
				ops = 0;
				max = 0;
				last = now;
				next = now + 1_000_000_000L;
			}
		}
	}
}
