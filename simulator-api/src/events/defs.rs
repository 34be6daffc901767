//! The list of every event, and nothing else: an event is one entry here.
//! What is made of the list is `derived.rs`'s (and, in the service,
//! `observe/probes.rs`'s `isim` provider).

/// The one list of events. Calls `$callback!` with every entry, in the form
///
/// ```text
/// probe__name "probe-name" "when it fires" (arg0: "meaning", arg1: "meaning", ...)
///     counters [ field "metric_total" "help" (pair name until closer "gauge" "help")?, ... ]
///     histograms [ field "metric_seconds" "help", ... ];
/// ```
///
/// A counter moves when its event fires (some only on a condition their help
/// states). A pair's figure is its opener minus its closer: what is in flight.
///
/// Two macros receive the list: `define_counts` here, which makes everything the
/// rest of the workspace reads (the counts, the event histograms as a struct of
/// any bucket type, the [`EVENTS`] table), and `isim_provider` in the server,
/// which must be a macro because `usdt` reads the probes as Rust functions. Each
/// spells this grammar in its matcher (macro_rules has no other way to take the
/// entries apart); a change of grammar fails to compile in both until they agree.
#[macro_export]
macro_rules! with_events {
    ($callback:ident) => {
        $callback! {
            request__start "request-start" "a request enters the data processor"
                (id: "request id", bytes: "element bytes", key: "the client's key for the request (header `isim-request-key`, the same on each of its retries; 0 without)")
                counters [
                    requests_started "isim_requests_started_total"
                        "Requests that entered the data processor (probe request-start)."
                        (pair requests_in_flight until requests_done
                            "isim_requests_in_flight" "Requests started and not yet done.")
                ]
                histograms [];
            request__nonblock "request-nonblock" "a permit was free at once"
                (id: "request id", available: "permits still free")
                counters [
                    requests_nonblocked "isim_requests_nonblocked_total"
                        "Requests that got a permit at once (probe request-nonblock)."
                ]
                histograms [];
            request__block "request-block" "no permit was free; the request waits"
                (id: "request id", permits: "permits total")
                counters [
                    requests_blocked "isim_requests_blocked_total"
                        "Requests that found no free permit and waited (probe request-block)."
                ]
                histograms [];
            request__unblock "request-unblock" "a blocked request got its permit"
                (id: "request id", wait_ns: "ns it waited")
                counters []
                histograms [
                    permit_wait "isim_permit_wait_seconds"
                        "How long blocked requests waited for a permit."
                ];
            request__shed "request-shed"
                "a blocked request was refused with 503: at once (`when_full = shed`) or after waiting `permit_wait_limit`"
                (id: "request id", permits: "permits total",
                 waited_ns: "ns it waited for a permit (0 when refused at once)")
                counters [
                    requests_shed "isim_requests_shed_total"
                        "Blocked requests refused with 503, at once or after permit_wait_limit (probe request-shed)."
                ]
                histograms [];
            request__abandoned "request-abandoned"
                "the client closed its connection before the reply (a timeout or a hang-up); the request runs on to its request-done"
                (id: "request id", waited_ns: "ns the client waited, since request-start")
                counters [
                    requests_abandoned "isim_requests_abandoned_total"
                        "Requests whose client went away before the reply (probe request-abandoned)."
                ]
                histograms [];
            request__done "request-done" "the reply is ready, or the request was cancelled"
                (id: "request id", lifetime_ns: "lifetime ns", blocked: "1 if it blocked",
                 cancelled: "1 if `on_disconnect = cancel` ended it early because its client had gone")
                counters [
                    requests_done "isim_requests_done_total"
                        "Requests ended (probe request-done), answered or cancelled.",
                    requests_cancelled "isim_requests_cancelled_total"
                        "Requests ended early because their client had gone and on_disconnect = cancel (request-done with cancelled = 1)."
                ]
                histograms [
                    request_lifetime "isim_request_lifetime_seconds"
                        "From request-start to request-done, network traverses included."
                ];
            persist__start "persist-start" "persistence of the element begins"
                (id: "request id", bytes: "bytes",
                 in_flight: "persists in flight (counting this one)",
                 permits_free: "permits free")
                counters [
                    persists_started "isim_persists_started_total"
                        "Persists handed to the store (probe persist-start)."
                        (pair persists_in_flight until persists_done
                            "isim_persists_in_flight" "Persists started and not yet done.")
                ]
                histograms [];
            persist__done "persist-done" "persistence ended, ok or not"
                (id: "request id", ok: "1 if ok", latency_ns: "latency ns",
                 in_flight: "persists still in flight",
                 wasted: "1 if its client had gone before it ended (request-abandoned first)")
                counters [
                    persists_done "isim_persists_done_total"
                        "Persists that ended, successfully or not (probe persist-done).",
                    persists_wasted "isim_persists_wasted_total"
                        "Persists that ended after their client had gone (persist-done with wasted = 1): work nobody waits for.",
                    persists_failed "isim_persists_failed_total"
                        "Persists that ended in failure (persist-done with ok = 0).",
                    persists_timed_out "isim_persists_timed_out_total"
                        "Failed persists that persist_timeout ended (a stalled store)."
                ]
                histograms [
                    persist_latency "isim_persist_latency_seconds"
                        "From persist-start to persist-done."
                ];
            persist__hedge "persist-hedge"
                "a persist outlived `hedge_after` and a second attempt began"
                (id: "request id", after_ns: "ns after persist-start")
                counters [
                    persists_hedged "isim_persists_hedged_total"
                        "Persists that outlived hedge_after and got a second attempt (probe persist-hedge)."
                ]
                histograms [];
            queue__enqueue "queue-enqueue"
                "the element went into the persistence queue (`persistence = pool`)"
                (id: "request id", depth: "elements queued, counting this one")
                counters [
                    queue_enqueued "isim_queue_enqueued_total"
                        "Elements put in the persistence queue (probe queue-enqueue)."
                        (pair queued until queue_dequeued
                            "isim_persists_queued"
                            "Elements waiting in the persistence queue (persistence = pool).")
                ]
                histograms [];
            queue__dequeue "queue-dequeue" "a worker took the element; its persist-start follows"
                (id: "request id", wait_ns: "ns it waited in the queue",
                 depth: "elements still queued")
                counters [
                    queue_dequeued "isim_queue_dequeued_total"
                        "Elements a worker took from the persistence queue (probe queue-dequeue)."
                ]
                histograms [
                    queue_wait "isim_queue_wait_seconds"
                        "How long elements waited in the persistence queue for a worker."
                ];
            queue__refuse "queue-refuse"
                "the queue was full and the request is refused with 503 (`when_full = shed`)"
                (id: "request id", depth: "elements queued")
                counters [
                    queue_refused "isim_queue_refused_total"
                        "Requests refused with 503 because the persistence queue was full (probe queue-refuse)."
                ]
                histograms [];
            queue__drop "queue-drop"
                "a worker dropped the element unpersisted: it waited over `queue_wait_limit`, or its client had gone and `on_disconnect = cancel`"
                (id: "request id", wait_ns: "ns it waited",
                 limit_ns: "queue_wait_limit in ns; 0 when dropped because its client had gone")
                counters [
                    queue_dropped "isim_queue_dropped_total"
                        "Elements dropped unpersisted: waited past queue_wait_limit, or their client had gone with on_disconnect = cancel (probe queue-drop)."
                ]
                histograms [];
            work__start "work-start" "the element's CPU work (`work = zstd`) was asked for"
                (id: "request id", bytes: "bytes",
                 on: "where it runs (0 async worker, 1 blocking pool, 2 rayon)")
                counters [
                    work_started "isim_work_started_total"
                        "Works begun on elements (probe work-start)."
                        (pair work_in_flight until work_done
                            "isim_work_in_flight" "Works begun and not finished.")
                ]
                histograms [];
            work__done "work-done" "the work finished"
                (id: "request id", run_ns: "ns it ran", wait_ns: "ns it waited for a slot",
                 on: "where it ran")
                counters [
                    work_done "isim_work_done_total" "Works finished (probe work-done)."
                ]
                histograms [
                    work_time "isim_work_seconds" "How long each element's CPU work ran.",
                    work_wait "isim_work_wait_seconds"
                        "How long work waited for a slot (work_limit) or a thread before it ran."
                ];
            lock__wait__start "lock-wait-start"
                "a request found the index's lock held (`index = true`) and waits for it"
                (id: "request id", entries: "entries in the index when it asked")
                counters [
                    lock_waits_started "isim_lock_waits_started_total"
                        "Requests that found the index's lock held and waited (probe lock-wait-start)."
                        (pair lock_waiters until lock_waits_done
                            "isim_lock_waiters" "Requests waiting for the index's lock.")
                ]
                histograms [];
            lock__wait__done "lock-wait-done" "a waiting request got the index's lock"
                (id: "request id", wait_ns: "ns it waited")
                counters [
                    lock_waits_done "isim_lock_waits_done_total"
                        "Waits for the index's lock that ended (probe lock-wait-done)."
                ]
                histograms [
                    lock_wait "isim_lock_wait_seconds"
                        "How long requests that found the index's lock held waited for it."
                ];
            compaction__start "compaction-start" "the compactor began a compaction of the index"
                (seq: "compaction number since the server started (no request)",
                 entries: "entries in the index")
                counters [
                    compactions_started "isim_compactions_started_total"
                        "Compactions of the index begun (probe compaction-start)."
                        (pair compactions_running until compactions_done
                            "isim_compactions_running" "1 while a compaction runs.")
                ]
                histograms [];
            compaction__done "compaction-done" "the compaction ended: its snapshot written, the index rebuilt"
                (seq: "compaction number (no request)", entries: "entries left in the index",
                 dropped: "expired entries it dropped",
                 held_ns: "the longest it held the index's lock at once, ns",
                 took_ns: "ns from compaction-start")
                counters [
                    compactions_done "isim_compactions_done_total"
                        "Compactions of the index ended (probe compaction-done)."
                ]
                histograms [
                    compaction_hold "isim_compaction_lock_hold_seconds"
                        "The longest each compaction held the index's lock at once."
                ];
            cache__hit "cache-hit" "a read found its key in the cache (`cache_entries`)"
                (id: "request id", key: "the element's key")
                counters [
                    cache_hits "isim_cache_hits_total"
                        "Reads answered from the cache (probe cache-hit)."
                ]
                histograms [];
            cache__stale__hit "cache-stale-hit" "a read found its key's entry stale (`cache_reachable`) and was answered with it (`stale_reads = serve`); a refresh of the key follows unless one is in flight"
                (id: "request id", key: "the element's key")
                counters [
                    cache_stale_hits "isim_cache_stale_hits_total"
                        "Reads answered with a stale entry (probe cache-stale-hit)."
                ]
                histograms [];
            cache__miss "cache-miss" "a read did not find its key in the cache, or found it stale (`stale_reads = miss`): a fill follows, or waits on one in flight, or is refused"
                (id: "request id", key: "the element's key")
                counters [
                    cache_misses "isim_cache_misses_total"
                        "Reads that did not find their key in the cache (probe cache-miss)."
                ]
                histograms [];
            cache__fill__start "cache-fill-start" "a fill of the cache began: a read of the store for the key"
                (id: "request id of the read that missed", key: "the element's key",
                 in_flight: "fills in flight, counting this one")
                counters [
                    cache_fills_started "isim_cache_fills_started_total"
                        "Fills of the cache begun (probe cache-fill-start)."
                        (pair cache_fills_in_flight until cache_fills_ended
                            "isim_cache_fills_in_flight" "Fills begun and not yet ended.")
                ]
                histograms [];
            cache__fill__done "cache-fill-done" "a fill read the store and put the element in the cache"
                (id: "request id of the read that began it", key: "the element's key",
                 latency_ns: "ns from cache-fill-start")
                counters [
                    cache_fills_ended "isim_cache_fills_ended_total"
                        "Fills that ended, done or abandoned (probes cache-fill-done and cache-fill-abandoned).",
                    cache_fills_done "isim_cache_fills_done_total"
                        "Fills that put their element in the cache (probe cache-fill-done)."
                ]
                histograms [
                    cache_fill_latency "isim_cache_fill_latency_seconds"
                        "From cache-fill-start to cache-fill-done."
                ];
            cache__fill__abandoned "cache-fill-abandoned" "a fill ended with nothing put in the cache: its request's client had gone (`abandoned_fills = discard`)"
                (id: "request id of the read that began it", key: "the element's key",
                 read: "1 if the store had read it (the read was wasted), 0 if it gave up waiting for the store",
                 after_ns: "ns from cache-fill-start")
                counters [
                    cache_fills_abandoned "isim_cache_fills_abandoned_total"
                        "Fills thrown away because their client had gone (probe cache-fill-abandoned).",
                    cache_fills_wasted "isim_cache_fills_wasted_total"
                        "Abandoned fills whose store read had been made (cache-fill-abandoned with read = 1): the store's work, for nobody."
                ]
                histograms [];
            cache__fill__refuse "cache-fill-refuse" "a miss found `fill_limit` fills in flight and is refused with 503"
                (id: "request id", key: "the element's key", in_flight: "fills in flight")
                counters [
                    cache_fills_refused "isim_cache_fills_refused_total"
                        "Misses refused with 503 because fill_limit fills were in flight (probe cache-fill-refuse)."
                ]
                histograms [];
            incident__start "incident-start"
                "a scenario's incident began: its settings are in force until incident-end"
                (seq: "incident number since the server started (no request)",
                 lasts_ns: "how long it lasts, ns")
                counters [
                    incidents_started "isim_incidents_started_total"
                        "Incidents begun (probe incident-start)."
                        (pair incident_active until incidents_ended
                            "isim_incident_active" "1 while an incident is in force.")
                ]
                histograms [];
            incident__in__force "incident-in-force"
                "an incident is in force: every 100 ms from its start to its end, so a tracer attached during one knows it at once"
                (seq: "incident number (no request)", elapsed_ns: "how long it has been in force, ns")
                counters []
                histograms [];
            incident__end "incident-end"
                "the incident ended: the settings it changed are back to what they were"
                (seq: "incident number (no request)", lasted_ns: "how long it lasted, ns")
                counters [
                    incidents_ended "isim_incidents_ended_total"
                        "Incidents ended (probe incident-end)."
                ]
                histograms [];
            accept__error "accept-error"
                "a listener's accept(2) failed, most often with EMFILE: the process is out of descriptors (ENFILE: the machine is)"
                (seq: "failure number since the server started (no request)",
                 errno: "the error's number (EMFILE is 24, ENFILE 23, on Linux and macOS)",
                 listener: "0 the data port, 1 the operator's listener")
                counters [
                    accept_errors "isim_accept_errors_total"
                        "accept(2) calls that failed, on either listener (probe accept-error)."
                ]
                histograms [];
            canary__tick "canary-tick" "the runtime's timer canary woke (every ~10 ms)"
                (seq: "tick number (no request)", late_ns: "ns later than asked",
                 interval_ns: "the interval in ns")
                counters []
                histograms [
                    timer_lateness "isim_runtime_timer_lateness_seconds"
                        "How much later than asked the runtime's canary sleep woke (probe canary-tick)."
                ];
        }
    };
}
