package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fpdb/fpdb/db"
)

// BenchmarkThroughput measures adds, check-then-adds and queries against
// a one-node cluster (4 shards, log of 1 replica) and a three-node cluster
// (4 shards × 2 replicas, log of 3 replicas) on loopback, 16 clients
// spread over the nodes, after a preload of random documents
// (20 000); "db" runs the same operations on one database with no
// cluster, for reference. Reported: ops/s, and each operation's p50 and
// p99 latency in µs.
//
//	go test ./cluster -run XXX -bench Throughput -benchtime 5s   (make bench-cluster)
func BenchmarkThroughput(b *testing.B) {
	preload := 20000
	ctx := context.Background()
	data := plantedData(11, preload)
	for _, nodes := range []int{0, 1, 3} {
		name := fmt.Sprintf("nodes=%d", nodes)
		if nodes == 0 {
			name = "db"
		}
		b.Run(name, func(b *testing.B) {
			var routers []*Router
			var one *db.DB
			if nodes == 0 {
				var err error
				if one, err = db.Open(b.TempDir(), nil); err != nil {
					b.Fatal(err)
				}
				defer one.Close()
				if _, err := one.AddBatch(ctx, data); err != nil {
					b.Fatal(err)
				}
			} else {
				tc := startCluster(b, nodes, 4, min(2, nodes), nil)
				for _, nd := range tc.nodes {
					routers = append(routers, nd.Router())
				}
				for i := 0; i < preload; i += 1000 {
					if _, err := routers[0].Add(ctx, data[i:min(i+1000, preload)], AddOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			for _, op := range []string{"add", "check-add-0.9", "query-0.9", "query-0.7"} {
				b.Run("op="+op, func(b *testing.B) {
					var next atomic.Int64
					var mu sync.Mutex
					var lat []time.Duration
					b.SetParallelism(16 / runtime.GOMAXPROCS(0))
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						c := next.Add(1)
						rng := rand.New(rand.NewPCG(uint64(c), 77))
						var mine []time.Duration
						defer func() {
							mu.Lock()
							lat = append(lat, mine...)
							mu.Unlock()
						}()
						for i := 0; pb.Next(); i++ {
							var err error
							start := time.Now()
							fp := randomFP(rng, 512)
							id := fmt.Sprintf("%s-%d-%d-%d", op, c, i, rng.Uint64())
							switch op {
							case "add", "check-add-0.9":
								o := AddOptions{}
								if op != "add" {
									o = AddOptions{Threshold: 0.9, Reject: true}
								}
								if one != nil {
									_, err = one.Add(ctx, db.Input{ID: id, Fingerprint: fp}, &db.AddOptions{Threshold: o.Threshold, Reject: o.Reject})
								} else {
									_, err = routers[int(c)%len(routers)].Add(ctx, []db.Input{{ID: id, Fingerprint: fp}}, o)
								}
							default:
								r := 0.9
								if op == "query-0.7" {
									r = 0.7
								}
								fp = nearFP(rng, data[rng.IntN(preload)].Fingerprint, 10)
								if one != nil {
									_, err = one.QueryFingerprint(ctx, fp, db.QueryOptions{Threshold: r})
								} else {
									_, err = routers[int(c)%len(routers)].QueryDoc(ctx, &db.Doc{Fingerprint: fp}, QueryOptions{Threshold: r})
								}
							}
							if err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, time.Since(start))
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
					slices.Sort(lat)
					if len(lat) > 0 {
						b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
						b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
					}
				})
			}
		})
	}
}
