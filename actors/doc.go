// Package actors wires docflow's hollywood actor engine and the shapes every
// docflow actor takes.
//
//   - NewEngine builds the process's engine and routes hollywood's logs to
//     zerolog (slog.go).
//
//   - Recover is the middleware every actor is spawned with (SpawnOpts): a
//     panic becomes an error result for the message's sender, never reaches
//     hollywood (v1.0.5 crashes the process past MaxRestarts). Such an
//     actor is called recovered: nothing restarts it, it takes its next
//     message with its state as the panic left it. (No actor here is
//     supervised in the Erlang sense; the IMAP sources' supervisor only
//     starts and stops one actor per leased source.)
//
//   - Pool is a kind of N recovered actors that take jobs by message, one
//     job per actor at a time: the pipeline spawns one kind per step type
//     ("step-<type>/<i>") and one for routing ("router/<i>"). (The search
//     indexer is one actor of its own, "indexer/<group>".) Submit never
//     blocks; an idle actor gets the job at once, else the kind's queue
//     holds it (its producer bounds it: a Kafka consumer's in-flight
//     budget), so the pool size is the one bound on work running.
//
//   - RunTimed runs a job under a timeout on a goroutine of its own: a job
//     that overruns gets its context cancelled and is reported as
//     ErrTimeout; one that ignores its context is abandoned instead of
//     holding its actor.
//
//   - SpawnIntegration is the pattern for the outside world: one long-lived
//     actor per configured integration ("integration/<name>") owns its
//     client (a Connector), connection, rate limit and reconnect backoff;
//     everything else addresses it with Call, Start, Stop and Reconfigure
//     messages.
//
//   - Go runs the I/O an actor must not wait for in its receive (a claim,
//     a write, an attempt) on a goroutine of its own, recovered: the
//     goroutine reports its outcome to its actor from a deferred Send, so
//     a panic still tells the actor. A Group counts such goroutines for
//     a service's Close, which may wait while actors still receive: once
//     it waits, Group.Go starts nothing (a bare WaitGroup's Add would race
//     with its Wait).
//
// What is an actor and what is a goroutine: actors are hollywood processes
// spawned with Recover, receiving one message at a time. The goroutines in
// this package are the one RunTimed starts per timed job and the time.AfterFunc
// timers an integration uses to send itself its reconnect (stopped on
// actor.Stopped, as every actor's timers are); Pool dispatches under a
// mutex, on the submitter's goroutine, and starts none.
package actors
