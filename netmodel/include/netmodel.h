/* netmodel: network models of source-routed system-area networks, in virtual time.
 *
 * No MPI in here. Build a network from a configuration (named profile file + overrides) and a
 * topology (file or generator name); inject packets; be called back when each is delivered;
 * run until a time or until idle; read statistics.
 *
 * Time is an int64 count of picoseconds everywhere. All functions that can fail return 0 on
 * success and a negative value on error, with a human-readable message (naming file, line and
 * key where there is one) written into the caller's buffer. Nothing here prints or exits.
 */
#ifndef NETMODEL_H
#define NETMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cm_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int64_t nm_time_t;           /* picoseconds */
#define NM_TIME_NEVER INT64_MAX
#define NM_PS_PER_S 1000000000000LL

/* The error convention of every library here: a message (printf format) into the caller's buffer
 * (none if err is NULL or errlen 0), and -1 to return. */
int nm_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------------------------ */
/* Configuration: typed keys with unit, default and source; INI profile files; --set overrides. */

typedef struct nm_config nm_config;

typedef enum { NM_KEY_INT, NM_KEY_DOUBLE, NM_KEY_STRING } nm_key_type;

/* One configuration key. `name` is "section.key" (e.g. "network.link_rate").
 * `unit` is one of: "" (dimensionless), "B" (bytes), "ps" (time), "b/s" (bit rate), "m" (metres),
 * "m/s" (velocity), "Hz". Values in files may carry a unit suffix with an SI/IEC prefix that is
 * converted to the key's unit (e.g. "1.28 Gb/s", "10 m", "6.25 ns", "16 KiB"); a bare number is
 * in the key's unit. `choices`, for string keys, is a '|'-separated list of allowed values or
 * NULL for free text; for numeric keys, "MIN..MAX" (plain numbers in the key's unit; either side may be empty)
 * is the allowed range, checked wherever a value is set. */
typedef struct nm_key_def {
    const char *name;
    nm_key_type type;
    const char *unit;
    const char *default_value;
    const char *source;       /* where the default comes from, e.g. "seed 000 Table 2" */
    const char *help;
    const char *choices;
    unsigned flags;           /* NM_KEY_NONNEG / NM_KEY_POSITIVE range checks (0: any value) */
} nm_key_def;
#define NM_KEY_NONNEG   1u    /* value >= 0 */
#define NM_KEY_POSITIVE 2u    /* value > 0 */

nm_config *nm_config_create(void);   /* with netmodel's own keys registered */
void nm_config_destroy(nm_config *cfg);
/* Other layers (the MPI model) add their keys; `defs` must outlive the config. */
int nm_config_register(nm_config *cfg, const nm_key_def *defs, size_t count, char *err, size_t errlen);
/* Load an INI file ([section] then key = value; ';' or '#' comments). Unknown sections or keys,
 * bad values and bad units are errors naming file and line. Keys set later override earlier. */
/* A program that uses only some layers of a full profile (the network-only tool) names the other
 * layers' sections ('|'-separated, e.g. "mpi|host|shim"): their keys are then passed over unread
 * instead of being unknown. Returns 0, or -1 if the list is too long. */
int nm_config_skip_sections(nm_config *cfg, const char *sections);
int nm_config_load_file(nm_config *cfg, const char *path, char *err, size_t errlen);
/* A profile is a name looked up as <dir>/<name>.ini in each ':'-separated directory of
 * `search_path` (NULL or "": nm_config_search_path's), or a path to a file. A profile may say
 * `include = other` in [profile]. */
int nm_config_load_profile(nm_config *cfg, const char *name_or_path, const char *search_path,
                           char *err, size_t errlen);
/* The default search path: $MPISIM_PROFILE_PATH, then <directory of the running executable>/
 * ../share/mpisim/configs (the same relative place in the build tree and in an installed tree),
 * then the configured installation's profiles (for other programs linked with libnetmodel).
 * -1 if it does not fit in len. */
int nm_config_search_path(char *out, size_t len);
/* "key=value" as given on a command line (origin names it in errors, e.g. "--set"). */
int nm_config_set(nm_config *cfg, const char *assignment, const char *origin, char *err, size_t errlen);
/* The same, as a profile line would set it: not the user's own choice, so a key the configuration
 * derives from others where they need it (network.slack_buffer, raised to hold a STOP's round trip
 * on the configured links: `mpisim config` names it "derived: ...") may still be derived. For
 * values read back from a recorded configuration (a trace's) that a profile or default gave. A
 * value set with nm_config_set is never derived. */
int nm_config_set_as_profile(nm_config *cfg, const char *assignment, const char *origin, char *err, size_t errlen);

/* Typed lookups. A name that was never registered is a defect in the calling code, not in the
 * user's input: debug builds assert; release builds return 0 / 0.0 / "" and keep the first such
 * name, which nm_config_lookup_error reports and nm_topology_load / nm_network_create (and the
 * MPI model) turn into an error, so that a typo in code never passes as a silent 0. */
int64_t nm_config_int(const nm_config *cfg, const char *name);
double nm_config_double(const nm_config *cfg, const char *name);
const char *nm_config_string(const nm_config *cfg, const char *name);
/* "lookup of unregistered key 'x'" after such a lookup, else NULL. */
const char *nm_config_lookup_error(const nm_config *cfg);
int nm_config_has(const nm_config *cfg, const char *name);
/* The resolved configuration as a JSON object: {"key": {"value": v, "unit": u, "source": s}, ...}
 * where source is the default's citation or "file:line" / "--set" of the value in force; a
 * profile value with a comment has "source": "<comment> (file:line)" and, when the comment
 * declares it, "kind": "cited" | "calibrated" | "assumed". */
int nm_config_write_json(const nm_config *cfg, FILE *out, int indent);
/* One line per key "key = value unit  (source)" for human output. */
int nm_config_write_text(const nm_config *cfg, FILE *out);
/* Every key (name NULL) or one: its help, type, unit, default and the default's source, its
 * choices, and the value in force with its origin when it differs. -1 and a message (with a
 * "did you mean") for an unknown name. */
int nm_config_describe(const nm_config *cfg, const char *name, FILE *out, char *err, size_t errlen);
/* The registered key nearest to a mistyped name (a few letters off, or without its section);
 * NULL if none is close. */
const char *nm_config_suggest(const nm_config *cfg, const char *name);
/* s as a JSON string literal (quotes, escapes; invalid UTF-8 becomes U+FFFD); NULL as "". The
 * one JSON string writer of the project's reports, traces' metadata and timelines. */
void nm_json_write_string(FILE *out, const char *s);
/* Snapshot of (name, value-as-text) for serialising a resolved configuration elsewhere. */
size_t nm_config_count(const nm_config *cfg);
const char *nm_config_key_at(const nm_config *cfg, size_t i);
const char *nm_config_value_text(const nm_config *cfg, const char *name);
const char *nm_config_unit(const nm_config *cfg, const char *name);
const char *nm_config_origin(const nm_config *cfg, const char *name);
/* A profile value's comment: the text after its ';' (or '#') and the indented comment-only lines
 * right below, white space collapsed; NULL when the value has none (defaults, --set). Profiles
 * declare each value's kind by the comment's first word (docs: configs/README.md):
 * "cited: ..." (a hardware value a source states), "calibrated: <source> ..." (fitted once, by a
 * script, from named measurements), "assumed: ... range LO..HI" (no source). */
const char *nm_config_note(const nm_config *cfg, const char *name);
/* "cited", "calibrated" or "assumed" as the value's note declares, "" if it declares none; NULL
 * for an unknown key. */
const char *nm_config_kind(const nm_config *cfg, const char *name);

/* ------------------------------------------------------------------------------------------ */
/* Registries (common's cm_registry.h): the names that network.engine, network.routing and
 * network.topology (and the tools' options) accept. */
const cm_named *nm_engine_at(size_t i);              /* packet engines built into this netmodel */
const cm_named *nm_routing_at(size_t i);             /* route computations, "auto" first */
const cm_named *nm_topology_generator_at(size_t i);  /* topology generators */

/* ------------------------------------------------------------------------------------------ */
/* Topology: hosts, switches, full-duplex links between numbered ports; source routes.        */

typedef struct nm_topology nm_topology;

/* `spec` is a generator name (crossbar:N, triangle18[:N], system96[:N], array:S:K, ring:S:K:L,
 * clos64[:N], torus2d:X:Y:K, torus2d-express:X:Y:K, cplant, irregular:S:SEED, auto:N — the default testbed for N hosts: one network.switch_ports crossbar (8x8)
 * up to that many hosts, triangle18 up to 18, system96 up to 96) or a path to a topology file
 * (format in netmodel/README.md). `cfg` gives link defaults and routing; NULL: defaults. */
nm_topology *nm_topology_load(const char *spec, const nm_config *cfg, char *err, size_t errlen);
/* How a long set-up goes (routes and their deadlock check grow with switches x destination
 * switches: tens of seconds at 65,536 hosts): `what` is being done, `done` of `total` steps. Called
 * at each hundredth of a stage and at its end, from the loading thread; it must not use the
 * topology. The library itself never prints: the caller decides what to show. */
typedef void (*nm_progress_fn)(void *user, const char *what, double done, double total);
/* nm_topology_load telling `progress` (may be NULL: the configuration's, below) how it goes. */
nm_topology *nm_topology_load_progress(const char *spec, const nm_config *cfg, nm_progress_fn progress, void *user,
                                       char *err, size_t errlen);
/* An observer carried by a configuration, so that a front end hears of the set-ups done deep
 * below it (the MPI model's network, a replay's) without every layer passing it on: every
 * nm_topology_load with `cfg` tells it. Not a key: never written into results. */
void nm_config_set_progress(nm_config *cfg, nm_progress_fn progress, void *user);
nm_progress_fn nm_config_progress(const nm_config *cfg, void **user);
void nm_topology_destroy(nm_topology *topo);
int nm_topology_hosts(const nm_topology *topo);
int nm_topology_switches(const nm_topology *topo);
int nm_topology_links(const nm_topology *topo);
const char *nm_topology_name(const nm_topology *topo);
/* Number of switches on the route from src to dst (hosts are 0-based), or -1 if no route. */
int nm_topology_route_hops(const nm_topology *topo, int src_host, int dst_host);
/* Routing report: the routing used (network.routing), the result of the deadlock checker run when
 * the topology was loaded (1 deadlock-free, 0 not: shortest routes on cyclic networks; updown and
 * itb routings that fail it are load errors) and its message. */
typedef struct nm_routing_info {
    const char *routing;       /* "shortest", "updown" or "itb" */
    int updown_root;           /* root switch, -1 for shortest */
    int deadlock_free;         /* the checker's verdict */
    const char *check_message;
    /* over host pairs on different switches (inter_switch_pairs of them; all of them up to 2^22
     * host pairs, else 2^20 pairs drawn by a fixed sequence: the same figures every time; with
     * none, every route stays within its switch, which is minimal: minimal_share 1, the means 0): */
    long inter_switch_pairs;
    double minimal_share;      /* share of routes with the minimal number of inter-switch links */
    double mean_links;         /* mean inter-switch links per route (in-transit detours excluded) */
    double mean_min_links;     /* mean minimal inter-switch distance */
    double itb_per_route;      /* mean in-transit hosts per route */
    double pairs;              /* the pairs these are over */
    int sampled;               /* 1: a sample of the pairs */
} nm_routing_info;
int nm_topology_routing_info(const nm_topology *topo, nm_routing_info *out);
/* Minimal number of inter-switch links between the switches of two hosts (0 on one switch), -1
 * if unreachable. */
int nm_topology_min_links(const nm_topology *topo, int src_host, int dst_host);
/* Inter-switch links of the shortest legal up*-down* path between the switches of two hosts when
 * the routing has an orientation (updown, itb), else nm_topology_min_links. Local traffic uses it:
 * seed 002 sec 5.4.2 has up*-down* minimal for almost every local destination (0.0008 ITBs per
 * message at l = 3), i.e. destinations "l switches away" along the network's original routes. */
int nm_topology_local_links(const nm_topology *topo, int src_host, int dst_host);

/* ------------------------------------------------------------------------------------------ */
/* Network: an engine (chosen by network.engine) running on a topology.                        */

typedef struct nm_network nm_network;

typedef struct nm_delivery {
    int src_host, dst_host;
    uint64_t payload_bytes;
    nm_time_t inject_time;    /* when the packet was handed to the source NIC */
    nm_time_t deliver_time;   /* when its last character (CRC) reached the destination host */
    uint64_t cookie;          /* caller's tag, returned untouched */
    uint32_t train;           /* 0: one packet; n > 0: the last packet of a train, reporting n
                               * packets: itself and those of the train delivered without a
                               * callback (see nm_network_inject_train); a drop callback of a
                               * train's packet other than its last reports that packet alone */
} nm_delivery;

typedef void (*nm_deliver_fn)(void *user, const nm_delivery *d);
/* Called for every packet dropped (timeout) so the caller can account for it. */
typedef void (*nm_drop_fn)(void *user, const nm_delivery *d);

nm_network *nm_network_create(const nm_config *cfg, const nm_topology *topo, char *err, size_t errlen);
void nm_network_destroy(nm_network *net);
void nm_network_set_callbacks(nm_network *net, nm_deliver_fn deliver, nm_drop_fn drop, void *user);
/* Hand a packet of `payload_bytes` data bytes to the source host's NIC at time t (t must not be
 * earlier than the last time the network was run to). Packet framing (route bytes, type, CRC,
 * GAP) is the engine's business. Returns 0, or negative on bad hosts / time. */
int nm_network_inject(nm_network *net, int src_host, int dst_host, uint64_t payload_bytes,
                      nm_time_t t, uint64_t cookie);
/* A packet train: `count` packets of `payload` bytes each from src to dst, packet i handed to the
 * source NIC at t + i * period (period >= 0), all carrying `cookie`. The network behaves exactly
 * as for `count` nm_network_inject calls (same delivery times, statistics, link busy times), but
 * only the train's last packet makes a delivery callback (train = count); a caller that needs
 * each packet's arrival injects packets. On an engine without trains of its own the network
 * matches deliveries to the train by (src, dst, cookie): no other packet between the same hosts
 * may then carry the same cookie while the train is in flight. Engines that can (myrinet) run the back-to-back
 * packets of an uncontended train in a few events instead of a few per packet. Returns as
 * nm_network_inject (nothing is injected on error); count 0 is an error. */
int nm_network_inject_train(nm_network *net, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t,
                            nm_time_t period, uint64_t cookie);
/* 1 when the engine runs trains itself (myrinet) and can cut them (nm_network_train_cut). */
int nm_network_has_trains(const nm_network *net);
/* Keep only the first `keep` packets of src's train `cookie` (on an engine with trains of its own):
 * the others are withdrawn as if never injected; they must not have left the NIC yet (-1 if one
 * has: a caller cuts before the network has run to their injection times). The kept packets not
 * yet delivered make one callback at the last one's delivery (train = their number); *delivered
 * (may be NULL) gets how many kept packets were delivered already (they make no callback). */
int nm_network_train_cut(nm_network *net, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered);
/* Time of the next pending engine event, NM_TIME_NEVER when idle. */
nm_time_t nm_network_next_time(const nm_network *net);
/* A multicast: one packet of `payload` bytes from src to each of dst[0..n-1] (distinct hosts, not
 * src), cookies[i] returned with dst[i]'s delivery. Where the switches multicast (engine ethernet
 * with ethernet.multicast = 1) it is sent once and copied where the routes part; elsewhere it is
 * n packets injected at t in the order given. Returns 0, or negative as nm_network_inject. */
int nm_network_inject_multicast(nm_network *net, int src, int n, const int *dst, const uint64_t *cookies,
                                uint64_t payload, nm_time_t t);
/* 1 when nm_network_inject_multicast sends one packet copied by the switches. */
int nm_network_has_multicast(const nm_network *net);
/* Process every event with time < limit (delivery callbacks are made from inside). */
int nm_network_run_until(nm_network *net, nm_time_t limit);
/* Run until no event is pending. */
int nm_network_run(nm_network *net);
/* For a driver that interleaves events of its own with the network's (the MPI model): process
 * the network's instants in time order while they are earlier than `limit`, exactly as calling
 * nm_network_run_until(net, t + 1) for each next instant t would (so now ends one past the last
 * instant processed, not at limit). A delivery or drop callback may lower the bound for the rest
 * of the call with nm_network_stop_before(net, t): no instant at or after t is processed. Only
 * the BEAT clock left counts as idle. Returns as nm_network_run_until (after the instant that
 * failed). */
int nm_network_run_instants(nm_network *net, nm_time_t limit);
void nm_network_stop_before(nm_network *net, nm_time_t t);
nm_time_t nm_network_now(const nm_network *net);
const char *nm_network_engine_name(const nm_network *net);
/* The data rate (bit/s) of the link at `host`'s port, as the topology set it (a rate the topology
 * file gives, else network.host_link_rate, else network.link_rate); 0 for a host out of range or
 * not connected. The host model paces its NIC ports by it. */
double nm_network_host_link_rate(const nm_network *net, int host);
/* 1 when packets can deadlock on this network: an engine whose blocked packets hold their
 * channels (myrinet, analytic) and routes that failed the deadlock checker; 0 otherwise (the
 * packet engines ethernet, avici and sci queue whole packets and cannot). Say so before a run. */
int nm_network_may_deadlock(const nm_network *net);
/* Why a run stopped on this network: after a network deadlock, "the network deadlocked at virtual
 * time X us: routing R on T is not deadlock-free (cycle); run with network.routing=auto or
 * updown" (returns 1); else nothing is written (returns 0). */
int nm_network_deadlock_reason(const nm_network *net, char *buf, size_t len);
/* Why the engine failed otherwise (a run call returned < 0 without a deadlock): for myrinet, the
 * slack buffer that overflowed, when, and which keys to change (returns 1); 0 when the engine
 * has nothing to say. */
int nm_network_failure_reason(const nm_network *net, char *buf, size_t len);

typedef struct nm_stats {
    uint64_t packets_injected, packets_delivered, packets_dropped;
    uint64_t payload_bytes_delivered;
    uint64_t char_hops;        /* characters moved across links (engine work counter) */
    uint64_t events;           /* engine events processed */
    /* In-transit buffers (network.routing = itb, seed 002 sec 4): */
    uint64_t itb_packets;      /* ejections into an in-transit buffer (each is reinjected or dropped) */
    uint64_t itb_host_stored;  /* of those, kept in host memory because the NIC pool was full */
    uint64_t itb_dropped;      /* of those, dropped because the pool was full (itb_overflow = drop) */
    uint64_t itb_pool_peak;    /* most bytes held in one NIC's in-transit pool */
    /* Stuck-network watchdog (myrinet engine): times the network had packets in flight and no
     * event left that could move them (a deadlock); nm_network_run_until returns -3 then. */
    uint64_t deadlocks;
    nm_time_t deadlock_time;   /* virtual time of the first detection */
} nm_stats;
void nm_network_stats(const nm_network *net, nm_stats *out);
/* Busy time of each directed link channel so far, for utilisation maps: fills up to `max`
 * entries and returns the number of channels. Channel i's endpoints via nm_topology. */
size_t nm_network_link_busy(const nm_network *net, nm_time_t *busy_ps, size_t max);

#ifdef __cplusplus
}
#endif
#endif
