// Package cluster runs fpdb across machines: shards of documents that
// follow one replicated write log, kept in NATS JetStream, with exact
// answers and race-free check-then-add whatever the number of nodes.
//
// # Basics
//
// A cluster is a few nodes, each started with Start. A node embeds a NATS
// server (nats-server, with JetStream) that joins the others over routes;
// together they keep
//
//   - the write log: the stream FPDB_LOG (subject fpdb.log), replicated on
//     Options.LogReplicas servers (3 by default) and synced to disk before
//     every acknowledgement. Each message is a batch of entries (EncodeBatch):
//     adds with their fingerprints, deletes, pins;
//   - the shard map: the key FPDB_MAP/map, written once by compare-and-swap
//     by the first node to start (UpdateMap changes it the same way). It
//     fixes the number of virtual shards V, the nodes holding each shard's
//     replicas, and the shards' database parameters.
//
// Every node is given the same members: its own name and its peers'
// (Options.Peers). The NATS cluster name is made from the members'
// names, and nats-server forms no route between servers of different
// cluster names: a node given another member list, or one that lists a
// node of another cluster by mistake, joins no one, and Start fails at
// once with a *ForeignPeerError naming the peers and their clusters, so
// that two clusters never merge (a merge mixed their logs: a write
// answered stored through one landed in the other). Two clusters of the
// same node names cannot be told apart that way: clusters whose route
// ports can reach each other need distinct node names. A node records
// its cluster's id (the map's) in its directory (CLUSTER-ID) and refuses
// a cluster of another id (ErrWrongCluster, naming both). A start that
// does not form within Options.StartTimeout fails naming the peers never
// reached and why (refused, no such host, another node there).
//
// The creation parameters set in a node's Options (Shards, Replicas, the
// DB fields, GroupWidth; zero asks for nothing) must be the cluster's:
// one that differs from the map's makes Start fail with a *ParamsError
// naming it and both values (as db.Open does with a database's), on a
// restart as on a new cluster, where the node whose map was not written
// is refused once it reads the other's.
//
// A document belongs to shard Shard(id, V). Each node opens a db.DB for
// every shard replica the map gives it, and each replica follows the log:
// it applies its shard's entries of every message, in log order, writing
// the message's sequence as a mark in the same atomic batch (see
// db.AddBatchMarked), so that a message delivered again after a crash is
// applied once. Replicas of a shard therefore hold the same documents at
// the same sequence (Node.Digest).
//
// A Router (Node.Router) serves a client: a query goes to one replica of
// every shard (the router picks it in turn, skipping replicas that failed
// or are behind) and the answers are merged;
// a shard that no replica answers fails the query with
// ErrShardUnavailable, never a partial answer. Because a document's hits
// depend only on its own fingerprint, each shard's exact answer is
// exactly the single database's answer restricted to its documents, and
// their union is the single database's answer. QueryOptions.MinSeq makes
// every shard answer at a log sequence at least that high
// (read-your-writes: Router.Written, or an AddResult.Seq).
//
// Router.Add with a threshold is an optimistic transaction on the log:
// read the last sequence L, query every shard at ≥ L (and the batch's
// earlier documents), append with JetStream's expected last sequence L;
// if the log moved, compare the new documents with the entries appended
// after L by exact Hamming distance and try again. Two near duplicates are
// never both accepted, whatever the number of routers. Concurrent adds of
// one router share log messages (up to Options.MaxBatch documents, as
// many adds as fit in one message). An add whose entries do not fit in
// one log message (6 MiB, tens of thousands of documents) is appended by
// its caller, apart from the shared ones, in several messages one after
// the other, each its own transaction: every document is stored whole,
// but such an add is not atomic, and when it fails or its context ends
// midway its results say which documents are stored. Only a document
// whose entry alone exceeds a message is refused (db.ErrTextTooLarge).
// An add whose context ends before its message is sent to the log is
// left out of it (its error means that nothing was stored); once sent,
// it waits for the log's answer past its context's end, and only when
// that answer does not come is the error ErrOutcomeUnknown (stored or
// not: sending the same add again is safe).
//
// Over HTTP (Node.Handler), a plain add, a delete by id and an unchecked
// batch whose shard no replica answers are appended to the log all the
// same and answered 202 Accepted, with "pending" (the Pending fields of
// api.AddResult, api.BatchResult and api.DeleteResult): the log holds them, and
// a replica of the shard applies them when it returns; until then whether
// an add replaces a stored document (or leaves one of the same content
// unchanged), or a delete finds its document, is not known. What needs
// the shard's answer (a check, a dry run, a read) is a 503. While a node
// starts, StartingHandler answers: /healthz 200, everything else 503
// (logged at INFO, DEBUG or WARN, not as errors).
//
// Router.Pairs appends a pin: every replica keeps a checkpoint of its
// shard at the pin's sequence, and the V(V+1)/2 pair tasks (i ≤ j) are
// run by replicas of shard i against shard j's documents at the pin.
// Router.Export appends a pin too, and merges the shards' documents at it
// by id, a page at a time, into a single database's export format;
// Router.Import stores such an export in an empty cluster.
//
// # Caveats
//
//   - V is fixed at creation. Node.AddReplica and Node.RemoveReplica
//     change a shard's replicas (compare-and-swap on the map); a new
//     replica copies a live replica's checkpoint (through the object
//     store FPDB_SEED) and follows the log from its sequence, or replays
//     the whole log when no replica answers. The log is kept whole (no
//     retention limit is set).
//   - Every replica reads the whole log and keeps its shard's entries.
//   - Texts are not stored in the cluster's shards (fingerprints, content
//     hashes, sizes and sources are): comparisons of passages and
//     templates are single-database features.
//   - A pair task that fails (or sends nothing for 30 s) is sent again,
//     to the shard's replicas in turn (each at most twice), by the router
//     that asked. While some replica of a round answers that the shard is
//     unavailable for now (behind the log, as after a restart; closing;
//     no replica subscribed; 30 s of silence; lost chunks), the rounds go
//     on, backing off between them, until 15 s after the first attempt
//     (the round under way then ends): a Pairs call with a whole shard
//     down takes about 15 s to fail with ErrShardUnavailable. If that
//     router fails, the caller asks again. Each replica keeps its last
//     four pins, and older ones while a task reads them and for five
//     minutes after (eight at most).
//   - The NATS routes have no authentication: keep the route port on a
//     private network.
//   - A node of a version before the NATS cluster name was made from the
//     members' names (it was "fpdb") forms no route with one of this
//     version: stop every node, then start them on the new version, as
//     for any upgrade. The cluster's data is kept.
//
// docs/SCALING.md describes the design, what each fault does, and the
// capacity arithmetic.
package cluster
