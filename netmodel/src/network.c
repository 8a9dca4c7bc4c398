/* Network facade: picks the engine named by network.engine and forwards to it; checks the
 * arguments every engine would otherwise check; relays deliveries and drops to the user. */
#include "nm_internal.h"
#include "cm_grow.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct nm_network {
    const nm_engine_ops *ops;
    void *eng;
    const nm_topology *topo;
    nm_deliver_fn deliver;
    nm_drop_fn drop;
    void *user;
    nm_time_t stop;     /* nm_network_run_instants: lowered by callbacks (nm_network_stop_before) */
    /* trains of an engine without inject_train: deliveries still held back, per train */
    struct held_train { int src, dst; uint64_t cookie; uint32_t count, left, dropped; } *held;
    size_t nheld, capheld;
};

static const nm_engine_ops *const engines[] = {
    &nm_engine_analytic,
    &nm_engine_myrinet,
    &nm_engine_ethernet,
    &nm_engine_avici,
    &nm_engine_sci,
};

/* Each engine registers the keys only it reads, in every configuration, so that profiles and
 * --set can name them whatever the engine chosen (engines of one family share a function;
 * analytic has none). */
static int (*const engine_keys[])(nm_config *cfg, char *err, size_t errlen) = {
    nm_packet_register_keys,
    nm_myrinet_register_keys,
};

int nm_engine_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof engine_keys / sizeof engine_keys[0]; i++)
        if (engine_keys[i](cfg, err, errlen) != 0) return -1;
    return 0;
}

const cm_named *nm_engine_at(size_t i)
{
    return i < sizeof engines / sizeof engines[0] ? &engines[i]->id : NULL;
}

static const nm_engine_ops *engine_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof engines / sizeof engines[0]; i++)
        if (!strcmp(engines[i]->id.name, name)) return engines[i];
    return NULL;
}

int nm_engine_blocks(const char *engine)
{
    const nm_engine_ops *ops = engine_named(engine);
    return ops ? ops->blocks : 1;
}

nm_network *nm_network_create(const nm_config *cfg, const nm_topology *topo, char *err, size_t errlen)
{
    if (!cfg || !topo || !topo->rt) {
        nm_set_err(err, errlen, "nm_network_create: a configuration and a loaded topology are needed");
        return NULL;
    }
    const char *name = nm_config_string(cfg, "network.engine");
    const nm_engine_ops *ops = engine_named(name);
    if (!ops) {
        char m[400];
        cm_registry_unknown(nm_engine_at, "network.engine", name, m, sizeof m);
        nm_set_err(err, errlen, "%s (%s; engines built into this netmodel)", m, nm_config_origin(cfg, "network.engine"));
        return NULL;
    }
    nm_network *net = calloc(1, sizeof *net);
    if (!net) {
        nm_set_err(err, errlen, "out of memory");
        return NULL;
    }
    net->ops = ops;
    net->topo = topo;
    net->eng = ops->create(cfg, topo, net, err, errlen);
    if (!net->eng) {
        free(net);
        return NULL;
    }
    if (nm_config_lookup_error(cfg)) {   /* a typo in an engine's code, never a silent 0 */
        nm_set_err(err, errlen, "network.engine '%s': %s", name, nm_config_lookup_error(cfg));
        nm_network_destroy(net);
        return NULL;
    }
    return net;
}

void nm_network_destroy(nm_network *net)
{
    if (!net) return;
    net->ops->destroy(net->eng);
    free(net->held);
    free(net);
}

void nm_network_set_callbacks(nm_network *net, nm_deliver_fn deliver, nm_drop_fn drop, void *user)
{
    if (!net) return;
    net->deliver = deliver;
    net->drop = drop;
    net->user = user;
}

int nm_network_inject(nm_network *net, int src, int dst, uint64_t payload, nm_time_t t, uint64_t cookie)
{
    if (!net) return -1;
    const nm_topology *tp = net->topo;
    if (src < 0 || dst < 0 || src >= tp->nhosts || dst >= tp->nhosts || src == dst) return -2;
    if (nm_route_get(tp, src, dst)->nhops < 0) return -3;
    if (t < net->ops->now(net->eng)) return -4;
    return net->ops->inject(net->eng, src, dst, payload, t, cookie);
}

int nm_network_inject_train(nm_network *net, int src, int dst, uint64_t payload, uint32_t count, nm_time_t t,
                            nm_time_t period, uint64_t cookie)
{
    if (!net) return -1;
    const nm_topology *tp = net->topo;
    if (src < 0 || dst < 0 || src >= tp->nhosts || dst >= tp->nhosts || src == dst || count == 0 || period < 0)
        return -2;
    if (nm_route_get(tp, src, dst)->nhops < 0) return -3;
    if (t < net->ops->now(net->eng)) return -4;
    if (period > 0 && (NM_TIME_NEVER - t) / period < (nm_time_t)count) return -2;
    if (net->ops->inject_train) return net->ops->inject_train(net->eng, src, dst, payload, count, t, period, cookie);
    if (cm_grow((void **)&net->held, &net->capheld, net->nheld + 1, sizeof *net->held, 8) < 0) return -6;
    for (uint32_t i = 0; i < count; i++) {
        int rc = net->ops->inject(net->eng, src, dst, payload, t + (nm_time_t)i * period, cookie);
        if (rc < 0) return rc;   /* only the first can fail: the arguments are the same */
    }
    net->held[net->nheld++] = (struct held_train){src, dst, cookie, count, count, 0};
    return 0;
}

int nm_network_has_trains(const nm_network *net)
{
    return net && net->ops->inject_train && net->ops->train_cut;
}

int nm_network_train_cut(nm_network *net, int src, uint64_t cookie, uint32_t keep, uint32_t *delivered)
{
    if (!nm_network_has_trains(net) || src < 0 || src >= net->topo->nhosts) return -2;
    uint32_t d = 0;
    int rc = net->ops->train_cut(net->eng, src, cookie, keep, &d);
    if (delivered) *delivered = d;
    return rc;
}

int nm_network_has_multicast(const nm_network *net)
{
    return net && net->ops->has_multicast && net->ops->has_multicast(net->eng);
}

int nm_network_inject_multicast(nm_network *net, int src, int n, const int *dst, const uint64_t *cookies,
                                uint64_t payload, nm_time_t t)
{
    if (!net || n < 0 || (n > 0 && (!dst || !cookies))) return -1;
    const nm_topology *tp = net->topo;
    for (int i = 0; i < n; i++) {
        if (src < 0 || dst[i] < 0 || src >= tp->nhosts || dst[i] >= tp->nhosts || src == dst[i]) return -2;
        if (nm_route_get(tp, src, dst[i])->nhops < 0) return -3;
    }
    if (t < net->ops->now(net->eng)) return -4;
    if (n > 0 && nm_network_has_multicast(net)) return net->ops->inject_multicast(net->eng, src, n, dst, cookies, payload, t);
    for (int i = 0; i < n; i++) {   /* no switch multicast: one packet per destination, in order */
        int rc = net->ops->inject(net->eng, src, dst[i], payload, t, cookies[i]);
        if (rc < 0) return rc;
    }
    return 0;
}

nm_time_t nm_network_next_time(const nm_network *net)
{
    return net ? net->ops->next_time(net->eng) : NM_TIME_NEVER;
}

int nm_network_run_until(nm_network *net, nm_time_t limit)
{
    return net ? net->ops->run_until(net->eng, limit) : -1;
}

int nm_network_run(nm_network *net) { return nm_network_run_until(net, NM_TIME_NEVER); }

int nm_network_run_instants(nm_network *net, nm_time_t limit)
{
    if (!net) return -1;
    net->stop = NM_TIME_NEVER;
    if (net->ops->run_instants) return net->ops->run_instants(net->eng, limit, &net->stop);
    for (;;) {
        nm_time_t tn = net->ops->next_time(net->eng), b = limit < net->stop ? limit : net->stop;
        if (tn == NM_TIME_NEVER || tn >= b) return 0;
        int rc = net->ops->run_until(net->eng, tn + 1);
        if (rc < 0) return rc;
    }
}

void nm_network_stop_before(nm_network *net, nm_time_t t)
{
    if (net && t < net->stop) net->stop = t;
}

nm_time_t nm_network_now(const nm_network *net) { return net ? net->ops->now(net->eng) : 0; }

const char *nm_network_engine_name(const nm_network *net) { return net ? net->ops->id.name : ""; }

double nm_network_host_link_rate(const nm_network *net, int host)
{
    if (!net || !net->topo || host < 0 || host >= net->topo->nhosts) return 0.0;
    int l = net->topo->hosts[host].link;
    return l >= 0 && l < net->topo->nlinks ? net->topo->links[l].rate_bps : 0.0;
}

int nm_network_failure_reason(const nm_network *net, char *buf, size_t len)
{
    if (!net || !net->ops->failure_reason || !len) return 0;
    return net->ops->failure_reason(net->eng, buf, len);
}

int nm_network_deadlock_reason(const nm_network *net, char *buf, size_t len)
{
    nm_stats st;
    nm_network_stats(net, &st);
    if (!net || !st.deadlocks) return 0;
    nm_routing_info ri;
    nm_topology_routing_info(net->topo, &ri);
    snprintf(buf, len,
             "the network deadlocked at virtual time %.3f us: routing '%s' on '%s' is not deadlock-free (%s); run with "
             "network.routing=auto or updown",
             (double)st.deadlock_time * 1e-6, ri.routing, nm_topology_name(net->topo), ri.check_message);
    return 1;
}

int nm_network_may_deadlock(const nm_network *net)
{
    return net && net->topo->route_check_ok == 0 && net->ops->blocks;
}

void nm_network_stats(const nm_network *net, nm_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (net) net->ops->stats(net->eng, out);
}

size_t nm_network_link_busy(const nm_network *net, nm_time_t *busy_ps, size_t max)
{
    return net ? net->ops->link_busy(net->eng, busy_ps, max) : 0;
}

void nm_network_deliver_(nm_network *net, const nm_delivery *d)
{
    if (!net) return;
    for (size_t i = 0; i < net->nheld; i++) {   /* a packet of a train the engine does not know */
        struct held_train *h = &net->held[i];
        if (h->src != d->src_host || h->dst != d->dst_host || h->cookie != d->cookie) continue;
        if (--h->left > 0) return;
        nm_delivery last = *d;
        last.train = h->count - h->dropped;   /* drops were reported on their own */
        *h = net->held[--net->nheld];
        if (net->deliver) net->deliver(net->user, &last);
        return;
    }
    if (net->deliver) net->deliver(net->user, d);
}

void nm_network_drop_(nm_network *net, const nm_delivery *d)
{
    if (!net) return;
    nm_delivery last = *d;
    for (size_t i = 0; i < net->nheld; i++) {   /* the train has one packet less to wait for */
        struct held_train *h = &net->held[i];
        if (h->src != d->src_host || h->dst != d->dst_host || h->cookie != d->cookie) continue;
        if (--h->left == 0) {   /* its last: it reports the packets delivered unseen too */
            last.train = h->count - h->dropped;
            *h = net->held[--net->nheld];
        } else {
            h->dropped++;
        }
        break;
    }
    if (net->drop) net->drop(net->user, &last);
}
