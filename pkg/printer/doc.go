// Package printer turns the results of package client into the output of clusterctl, in one of
// the formats simple, table, json and env.
//
// Invariants:
//
//   - New refuses an unknown format, and Printer.Check refuses a format a command cannot print,
//     so a command refuses a bad -w before it sends anything.
//   - One column model (column in columns.go) feeds both the simple and the table output of
//     member list and snapshot status, and one function draws every table; member list's simple
//     line keeps etcdctl's six fields letter for letter, its table adds IS LEADER.
//   - The formats each kind of result can be printed in are one table, kinds, with a row per
//     kind: nothing depends on the order of the Kind constants.
//   - IDs print as 16 lowercase hex digits in every format, JSON included (as strings), because
//     JSON numbers above 2^53 are rounded by jq and JavaScript.
//   - The JSON field names are a documented, golden-tested schema (docs/output.md): a field is
//     never renamed or removed, and every field is always present. A fact etcd prints has etcd's
//     key (IDs as etcdctl's header: cluster_id, member_id; a snapshot's size as etcdutl's:
//     totalSize), and the same fact has the same key in every output. A result this package
//     defines carries the schema in its own tags; a shape of package client's has one JSON type.
//   - The phase-two environment names every member, the new one included, sorted by name and
//     then ID, with every value double-quoted so that the same lines work with eval, in a
//     systemd EnvironmentFile= and, as docs/output.md explains, in Environment=.
//   - member replace's json is one whole object a line, written as its steps are made: the line
//     with the environment comes before the command waits for the new member, so a script can
//     start it; stdout holds nothing else.
//   - A dry run prints in simple or json only. Its simple output is a fixed block whose last line
//     is the verdict, "would be accepted" or "would be refused: <the server's message>".
//   - cluster status's member rows take member list's identity columns from memberColumns, its
//     quorum figures are a dry run's rows (quorumRows), and --all-contexts' columns are the
//     cluster's own figures by name: no figure is computed or labelled twice.
//   - Printing writes to the writer given and nowhere else.
package printer
