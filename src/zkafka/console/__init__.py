"""The web console (`zkafka ui`): the cluster seen in a browser, from the same code the CLI uses.

A Starlette application (`app.build_app`) served by uvicorn (`server.serve`), with server-rendered
Jinja templates (autoescaped: record contents, znode data and Kafka's error texts are shown as
text, never as markup), one stylesheet and one small script served by the console itself (no CDN:
machines running it may be offline; `console.js` refreshes a page's live parts in place, so forms
being filled in survive). Pages have stable URLs, one routes module per page family:

    /                                   overview: brokers (alive or dead), controller, doctor findings
    /brokers                            brokers with their endpoints, racks and epochs
    /topics, /topics/<name>             partitions, leaders, replicas, ISR, offsets, configs
    /topics/<name>/records?partition=P&offset=O&format=text|json|hex   (or &timestamp=MS)
    /groups, /groups/<id>               both kinds of group, members, assignments, lag and its chart
    /reassignments                      moves in progress, pending admin requests (routes_admin)
    /acls, /quotas                      ACL bindings ("no authorizer" when none), client quotas
    /login                              signing in, with --login
    /zookeeper?path=/...                the raw tree, read-only

Data comes through zkafka's client library (`zkafka.client`: the admin client, `GroupAdmin`, a
consumer for records) and, when a ZooKeeper connect string is known, through the doctor's decoded
view of the tree (`zkafka.doctor`), which also gives the overview its findings, the seeds'
ZooKeeper consumer groups and the pending reassignment and election requests (`source.py` holds
the connections and the groups' lag samples, `lag_history.py`; `*_data.py` turn them into what
the pages show). When no broker answers, the overview shows what ZooKeeper says instead.

The actions all go through the brokers' admin APIs, so their authorizer decides: create a topic,
add partitions and alter a topic config (`topic_actions.py`, each dry-run first with
validate_only), start or cancel a reassignment from a plan in Kafka's JSON and elect preferred
leaders (`reassign_data.py`, `routes_admin.py`), reset a group's offsets (`group_reset.py`:
planned, shown, then committed; refused while the group has live members). Each shows its plan on
a confirmation page first, is refused in `--read-only` mode, and is taken only from the console's
own pages (a form posted from another origin is a 403). The console's connections can carry a
principal (`--command-config`); with `--login` (`sessions.py`, `routes_login.py`) each user signs in
with their Kafka user, checked by the brokers over SASL, and acts as themselves through connections
of their own (and nothing is read from ZooKeeper, which no authorizer guards).
Bad URLs and form values, and values the brokers refuse, answer an error page with the right HTTP
status and Kafka's error text (`errors.py`), never a traceback. Only `zkafka.cli` imports this
package.
"""
