/** Work a `Slicer` runs a slice at a time. */
export interface SlicedWork {
  /**
   * Does at most `budget` units of the work (`budget` ≥ 1) and returns how many it did. May call
   * `run` or `later` of its own slicer: what that hands in is queued behind the work already queued.
   */
  runSlice(budget: number): number;
  /** Whether units are left after a slice (absent: never; a work of one unit is over once run). */
  unfinished?(): boolean;
}

/**
 * Runs work in FIFO order, at most `perTick` units per event-loop tick: what is over the
 * budget waits for a `setImmediate` (the check phase, right after the poll phase), so I/O that
 * came in meanwhile (an HTTP request, a WebSocket frame) is handled between two slices instead of
 * waiting for the whole of a large fan-out. A work never overtakes one queued before it, and runs
 * whole before the next one starts: what one listener or socket gets stays in the order it was
 * handed in.
 *
 * A `Slicer` holds no timer while idle and allocates nothing per unit; one `setImmediate` per tick
 * in which it was used resets its budget.
 */
export class Slicer {
  private readonly queue: SlicedWork[] = [];
  private head = 0;
  /** Units done in the current tick. */
  private used = 0;
  private scheduled = false;
  /** A work runs at once (`run`), outside the queue. */
  private running = false;
  private readonly onTick = () => this.tick();

  constructor(private readonly perTick: number) {}

  /** Runs `work` at once as far as this tick's budget goes and nothing is queued before it; the rest later. */
  run(work: SlicedWork) {
    if (!this.running && this.head === this.queue.length && this.used < this.perTick) {
      // What the work hands in while it runs is queued behind it.
      this.running = true;
      try {
        this.used += work.runSlice(this.perTick - this.used);
      } finally {
        this.running = false;
      }
      this.schedule();
      if (!work.unfinished?.()) return;
    }
    this.queue.push(work);
    this.schedule();
  }

  /** Runs `work` in a later tick (after the current I/O callback is done), behind everything already queued. */
  later(work: SlicedWork) {
    this.queue.push(work);
    this.schedule();
  }

  /** Drops every queued work (the owner is closing). */
  clear() {
    this.queue.length = 0;
    this.head = 0;
  }

  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.onTick);
  }

  private tick() {
    this.scheduled = false;
    this.used = 0;
    try {
      while (this.head < this.queue.length && this.used < this.perTick) {
        const work = this.queue[this.head];
        let over = true;
        try {
          // Done (or it threw, which a work must not do: it is dropped, and the queue behind it goes
          // on in the next tick).
          this.used += work.runSlice(this.perTick - this.used);
          over = !work.unfinished?.();
        } finally {
          if (over) this.head++;
        }
      }
    } finally {
      this.compact();
    }
  }

  private compact() {
    if (this.head === this.queue.length) {
      // Idle: the next work handed in (in a later callback, mostly after the poll phase) gets a
      // whole budget at once.
      this.queue.length = 0;
      this.head = 0;
      this.used = 0;
      return;
    }
    if (this.head > 1024) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.schedule();
  }
}
