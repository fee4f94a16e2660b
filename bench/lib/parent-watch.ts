/**
 * Preloaded (`node --import`) into every process the benchmark starts. When the harness that
 * started the process is gone (killed with SIGKILL, say, so it could not tear down), the child
 * sends itself SIGTERM, runs its own graceful shutdown, and is forced out a few seconds later.
 * So a benchmark never leaves servers behind.
 */
const parent = Number(process.env.BENCH_PARENT_PID);

if (Number.isInteger(parent) && parent > 1) {
  const timer = setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      clearInterval(timer);
      setTimeout(() => process.exit(1), 3000).unref();
      process.kill(process.pid, "SIGTERM");
    }
  }, 1000);
  timer.unref();
}

export {};
