package collector

import "sync"

// workQueue runs tasks in the order they were queued on at most limit
// goroutines, started when there is work and ended when there is none.
// With limit set to api.max_concurrency, every upstream call of every
// scrape waits here, in order, instead of in a goroutine of its own.
type workQueue struct {
	mu      sync.Mutex
	tasks   []func()
	head    int // tasks[head:] are waiting
	workers int
	limit   int
}

// setLimit changes the number of workers (at least 1).
func (q *workQueue) setLimit(n int) {
	q.mu.Lock()
	q.limit = max(n, 1)
	start := q.grow()
	q.mu.Unlock()
	q.start(start)
}

// push queues tasks.
func (q *workQueue) push(tasks []func()) {
	if len(tasks) == 0 {
		return
	}
	q.mu.Lock()
	q.tasks = append(q.tasks, tasks...)
	start := q.grow()
	q.mu.Unlock()
	q.start(start)
}

// grow counts the workers to start for the waiting tasks; callers hold mu.
func (q *workQueue) grow() int {
	n := min(q.limit-q.workers, len(q.tasks)-q.head)
	if n <= 0 {
		return 0
	}
	q.workers += n
	return n
}

func (q *workQueue) start(n int) {
	for range n {
		go q.work()
	}
}

func (q *workQueue) work() {
	for {
		q.mu.Lock()
		if q.head == len(q.tasks) || q.workers > q.limit {
			q.workers--
			if q.head == len(q.tasks) {
				q.tasks, q.head = q.tasks[:0], 0
			}
			q.mu.Unlock()
			return
		}
		t := q.tasks[q.head]
		q.tasks[q.head] = nil
		q.head++
		// Under constant load the queue may never drain: move the waiting
		// tasks to the front once the done ones fill half the slice.
		if q.head >= 1024 && 2*q.head >= len(q.tasks) {
			n := copy(q.tasks, q.tasks[q.head:])
			clear(q.tasks[n:])
			q.tasks, q.head = q.tasks[:n], 0
		}
		q.mu.Unlock()
		t()
	}
}
