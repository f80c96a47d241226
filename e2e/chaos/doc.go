// Package chaos is the chaos suite: it runs docflow as deployed on one
// machine (`docflow broker`, two `docflow api`, three `docflow worker`, a
// private PostgreSQL and ClickHouse, Dovecot for mail), puts documents in
// through uploads, process-url and IMAP while asking for some to be
// processed again, injects faults at random moments (SIGKILL of any
// docflow process, a broker restart, a PostgreSQL crash and restart,
// ClickHouse stopped, a worker stopped with SIGSTOP past its lease), and
// once the deployment is quiet checks the invariants a user relies on:
// every document terminal and there once, each step's result recorded
// once, each delivery to a destination once, every event delivered with
// its one id, no blob left unreferenced after a sweep, no completed file
// without its processed version. `make chaos` runs it through
// cmd/docflow-chaos; TestChaosShort runs a short form in `make test`.
// docs/chaos.md says how to run it and read its tables.
//
// Files:
//   - chaos.go: Config, Run, the workload's pacing and the Report with its tables
//   - deployment.go: the processes and servers of a run, their settings, healing after the faults
//   - procs.go: a docflow process started, killed, paused and started again
//   - services.go: the private PostgreSQL and ClickHouse, ports, the module root
//   - workload.go: the clients (Idempotency-Key retries), the file server, the webhook receiver, mail
//   - faults.go: the fault driver and its kinds
//   - invariants.go: the checks, in SQL, on the folders and through the API
package chaos
