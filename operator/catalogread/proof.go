package catalogread

// Rendering is the one query of package catalogproof: every fact of the
// schemas $1 (text[]) as PostgreSQL's own pg_get_*def functions and
// catalogs print it, one row per object. It shares nothing with Objects
// (the planner's model): the proof that an empty plan means in sync is
// only worth something when the two are written apart.
//
// Each row is (tbl, root, col, ref, token, line): tbl and root are the
// table (and the top of its partition tree) the line belongs to and col
// the column, for exclusion patterns; ref and token are set on sequences whose name PostgreSQL
// generated (a serial's t_id_seq), so that catalogproof writes the token
// where a default names the sequence; line is the fact. The caller sets
// search_path to ” first (SetSearchPath), so every name prints
// schema-qualified. No OID is printed; names PostgreSQL generates print as
// <auto:LABEL(table)>, and so do those of a partition's indexes and
// constraints attached to its partitioned table's (<auto:attached(table)>,
// the line naming the parent's) when PostgreSQL named them (or, for a
// constraint, gave it the parent's name): the desired SQL declares them on
// the parent. One attached under a name of its own keeps it, as pg_dump
// shows it. Grants print by role name,
// and only those to roles other than the object's owner and the session's
// own role (ptah's, on either side: what a DBA grants the role ptah runs
// as, like ownership, is the deployment's and not the desired schema's).
const Rendering = `
WITH ns AS (SELECT oid, nspname, nspowner, nspacl FROM pg_namespace WHERE nspname = ANY ($1::text[])),
ext AS (SELECT classid, objid FROM pg_depend WHERE deptype = 'e'),
rel AS (
  SELECT c.oid, c.relname, c.relkind, c.relowner, c.relacl, c.relpersistence, c.relispartition, c.relrowsecurity,
         c.relforcerowsecurity, c.reloptions, c.relreplident, c.relam, c.reloftype, c.relpartbound,
         quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS qname,
         coalesce((SELECT r.relname FROM pg_class r WHERE r.oid = pg_partition_root(c.oid)), c.relname) AS root
  FROM pg_class c JOIN ns n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'c', 'f')
    AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = c.oid)
),
owned AS (
  SELECT d.objid AS seq, d.deptype, r.relname AS tbl, r.root, r.qname || '.' || quote_ident(a.attname) AS col
  FROM pg_depend d JOIN rel r ON r.oid = d.refobjid
  JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
  WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
    AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
),
seq AS (
  SELECT s.seqrelid, r.qname, r.relowner, r.relacl, r.relpersistence, r.oid::regclass::text AS ref, o.col, o.deptype,
         coalesce(o.tbl, r.relname) AS tbl, coalesce(o.root, r.root) AS root,
         CASE WHEN o.col IS NOT NULL AND (starts_with(r.relname, o.tbl || '_') OR length(r.relname) >= 60) AND r.relname ~ '_seq[0-9]*$'
              THEN '<seq of ' || o.col || '>' ELSE r.qname END AS label,
         format('type=%s start=%s increment=%s min=%s max=%s cache=%s cycle=%s', format_type(s.seqtypid, NULL),
                s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle) AS params
  FROM pg_sequence s JOIN rel r ON r.oid = s.seqrelid LEFT JOIN owned o ON o.seq = s.seqrelid
),
con AS (
  SELECT k.oid, k.conname, k.contype, k.conrelid, k.conindid, k.condeferrable, k.condeferred, k.convalidated, k.connoinherit,
         k.conislocal, k.conparentid, r.qname, r.relname, r.root,
         CASE k.contype WHEN 'p' THEN 'pkey' WHEN 'u' THEN 'key' WHEN 'f' THEN 'fkey' WHEN 'c' THEN 'check' WHEN 'x' THEN 'excl' END AS lbl
  FROM pg_constraint k JOIN rel r ON r.oid = k.conrelid
),
conl AS (
  SELECT k.*, CASE WHEN k.conparentid <> 0 AND (k.conname = (SELECT pk.conname FROM pg_constraint pk WHERE pk.oid = k.conparentid)
                                                OR (starts_with(k.conname, k.relname || '_') OR length(k.conname) >= 60) AND k.conname ~ '_(pkey|key|excl|fkey|check)[0-9]*$')
                   THEN '<auto:attached(' || k.qname || ')>'
                   WHEN k.lbl IS NOT NULL AND (starts_with(k.conname, k.relname || '_') OR length(k.conname) >= 60)
                        AND k.conname ~ ('_' || k.lbl || '[0-9]*$')
                   THEN '<auto:' || k.lbl || '(' || k.qname || ')>' ELSE quote_ident(k.conname) END AS label
  FROM con k
),
idx AS (
  SELECT i.indexrelid, ic.relname, t.relname AS tbl, t.root, t.qname, i.indisunique, i.indnullsnotdistinct, i.indisprimary,
         i.indisexclusion, i.indimmediate, i.indisclustered, i.indisreplident, i.indisvalid, ic.reloptions,
         CASE WHEN EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
                   AND (starts_with(ic.relname, t.relname || '_') OR length(ic.relname) >= 60) AND ic.relname ~ '_(idx|key|pkey|excl)[0-9]*$'
              THEN '<auto:attached(' || t.qname || ')>'
              WHEN (starts_with(ic.relname, t.relname || '_') OR length(ic.relname) >= 60)
                   AND ic.relname ~ ('_' || coalesce(k.lbl, 'idx') || '[0-9]*$')
              THEN '<auto:' || coalesce(k.lbl, 'idx') || '(' || t.qname || ')>' ELSE quote_ident(ic.relname) END AS label
  FROM pg_index i JOIN rel t ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
  LEFT JOIN con k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x')
),
typ AS (
  SELECT t.oid, t.typname, t.typtype, t.typowner, t.typacl, t.typbasetype, t.typtypmod, t.typcollation, t.typdefault, t.typnotnull,
         t.typrelid, t.typinput, t.typoutput, t.typreceive, t.typsend, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
         quote_ident(n.nspname) || '.' || quote_ident(t.typname) AS qname
  FROM pg_type t JOIN ns n ON n.oid = t.typnamespace
  WHERE t.typtype IN ('b', 'c', 'd', 'e', 'r', 'm', 'p')
    AND (t.typtype <> 'c' OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
    AND NOT (t.typtype = 'b' AND t.typelem <> 0 AND EXISTS (SELECT 1 FROM pg_type e WHERE e.oid = t.typelem AND e.typarray = t.oid))
    AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_type'::regclass AND ext.objid = t.oid)
),
fn AS (
  SELECT p.oid, p.prokind, p.proowner, p.proacl, quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS qname
  FROM pg_proc p JOIN ns n ON n.oid = p.pronamespace
  WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
    -- a range type's constructors are the type's
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'i')
)
-- the managed schemas themselves
SELECT NULL::text AS tbl, NULL::text AS root, NULL::text AS col, NULL::text AS ref, NULL::text AS token,
       format('schema %s comment=%s acl=%s', quote_ident(n.nspname), obj_description(n.oid, 'pg_namespace'),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> n.nspowner) a)) AS line
FROM ns n
UNION ALL
-- extensions, wherever they are, by name and schema, and their version
-- where it is not the server's default (CREATE EXTENSION ... VERSION)
SELECT NULL, NULL, NULL, NULL, NULL, concat_ws(' ', format('extension %s schema=%s relocatable=%s', quote_ident(e.extname), quote_ident(en.nspname), e.extrelocatable), CASE WHEN e.extversion IS DISTINCT FROM (SELECT a.default_version FROM pg_available_extensions a WHERE a.name = e.extname) THEN 'version=' || e.extversion END)
FROM pg_extension e JOIN pg_namespace en ON en.oid = e.extnamespace
UNION ALL
-- relations: tables, partitions, views, materialized views, composite types' relations, foreign tables
SELECT r.relname, r.root, NULL, NULL, NULL,
       format('%s %s persistence=%s am=%s options=%s oftype=%s partkey=%s partof=%s bound=%s inherits=%s rls=%s forcerls=%s replident=%s%s comment=%s acl=%s',
         CASE r.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view'
                        WHEN 'c' THEN 'composite relation' WHEN 'f' THEN 'foreign table' END,
         r.qname, r.relpersistence, (SELECT amname FROM pg_am WHERE oid = r.relam), array_to_string(r.reloptions, ','),
         CASE WHEN r.reloftype <> 0 THEN format_type(r.reloftype, NULL) END,
         pg_get_partkeydef(r.oid),
         (SELECT string_agg(p.qname, ',') FROM pg_inherits i JOIN rel p ON p.oid = i.inhparent WHERE i.inhrelid = r.oid AND r.relispartition),
         pg_get_expr(r.relpartbound, r.oid),
         (SELECT string_agg(quote_ident(pn.nspname) || '.' || quote_ident(p.relname), ',' ORDER BY i.inhseqno) FROM pg_inherits i
            JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace pn ON pn.oid = p.relnamespace WHERE i.inhrelid = r.oid AND NOT r.relispartition),
         r.relrowsecurity, r.relforcerowsecurity, r.relreplident,
         CASE WHEN r.relkind IN ('v', 'm') THEN ' def=' || pg_get_viewdef(r.oid) ELSE '' END
           || CASE WHEN r.relkind = 'f' THEN (SELECT ' server=' || quote_ident(s.srvname) || ' ftoptions=' || coalesce(array_to_string(f.ftoptions, ','), '')
                                              FROM pg_foreign_table f JOIN pg_foreign_server s ON s.oid = f.ftserver WHERE f.ftrelid = r.oid) ELSE '' END,
         obj_description(r.oid, 'pg_class'),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(coalesce(r.relacl, acldefault('r', r.relowner))) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> r.relowner) a))
FROM rel r WHERE r.relkind <> 'S'
UNION ALL
-- columns of every relation, with what the column owns
SELECT r.relname, r.root, a.attname::text, NULL, NULL,
       format('column %s.%s type=%s collation=%s notnull=%s default=%s identity=%s generated=%s storage=%s compression=%s stattarget=%s options=%s fdwoptions=%s comment=%s acl=%s local=%s',
         r.qname, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
         CASE WHEN a.attcollation <> t.typcollation THEN (SELECT quote_ident(cn.nspname) || '.' || quote_ident(co.collname) FROM pg_collation co
                                                           JOIN pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation) END,
         a.attnotnull,
         CASE WHEN a.attgenerated = '' THEN pg_get_expr(d.adbin, d.adrelid) END,
         CASE WHEN a.attidentity <> '' THEN a.attidentity::text || coalesce((SELECT ' (sequence ' || s.label || ' ' || s.params || ')'
                                                                              FROM seq s WHERE s.deptype = 'i' AND s.col = r.qname || '.' || quote_ident(a.attname)), '') END,
         CASE WHEN a.attgenerated <> '' THEN a.attgenerated::text || ' ' || pg_get_expr(d.adbin, d.adrelid) END,
         CASE a.attstorage WHEN 'p' THEN 'plain' WHEN 'm' THEN 'main' WHEN 'x' THEN 'extended' WHEN 'e' THEN 'external' END,
         CASE a.attcompression WHEN 'p' THEN 'pglz' WHEN 'l' THEN 'lz4' END,
         a.attstattarget, array_to_string(a.attoptions, ','), array_to_string(a.attfdwoptions, ','),
         col_description(r.oid, a.attnum),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(a.attacl) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> r.relowner) a),
         -- an inheriting table's column declared by it too (t) or only
         -- inherited (f): the parent's DROP COLUMN takes only the latter.
         -- A partition's columns are all its parent's, however made.
         CASE WHEN NOT r.relispartition THEN a.attislocal END)
FROM rel r
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE r.relkind <> 'S'
UNION ALL
-- sequences, an identity column's with its column
SELECT s.tbl, s.root, NULL, CASE WHEN s.label <> s.qname THEN s.ref END, CASE WHEN s.label <> s.qname THEN s.label END,
       format('sequence %s ownedby=%s persistence=%s %s comment=%s acl=%s', s.label, s.col, s.relpersistence, s.params,
         obj_description(s.seqrelid, 'pg_class'),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(coalesce(s.relacl, acldefault('s', s.relowner))) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> s.relowner) a))
FROM seq s WHERE s.deptype IS DISTINCT FROM 'i'
UNION ALL
-- constraints of tables and partitions (not the copies PostgreSQL makes on
-- the partitions of a table a foreign key references). NO INHERIT means
-- something for a check only: a key's flag follows how it was made (on the
-- partition, or through its parent), as pg_dump leaves it.
SELECT k.relname, k.root, NULL, NULL, NULL,
       format('constraint %s %s type=%s def=%s deferrable=%s deferred=%s validated=%s noinherit=%s local=%s inherited=%s comment=%s',
         k.qname, k.label, k.contype, pg_get_constraintdef(k.oid), k.condeferrable, k.condeferred, k.convalidated, k.contype = 'c' AND k.connoinherit,
         k.conislocal, k.conparentid <> 0, obj_description(k.oid, 'pg_constraint'))
FROM conl k
WHERE NOT (k.contype = 'f' AND k.conparentid <> 0 AND EXISTS (SELECT 1 FROM pg_constraint pk WHERE pk.oid = k.conparentid AND pk.conrelid = k.conrelid))
UNION ALL
-- indexes of tables, partitions and materialized views, constraints' included
SELECT x.tbl, x.root, NULL, NULL, NULL,
       format('index %s %s def=%s unique=%s nullsnotdistinct=%s primary=%s exclusion=%s immediate=%s clustered=%s replident=%s valid=%s options=%s stattarget=%s partof=%s comment=%s',
         x.qname, x.label, replace(pg_get_indexdef(x.indexrelid), 'INDEX ' || quote_ident(x.relname) || ' ON ', 'INDEX ' || x.label || ' ON '),
         x.indisunique, x.indnullsnotdistinct, x.indisprimary, x.indisexclusion, x.indimmediate, x.indisclustered, x.indisreplident,
         x.indisvalid, array_to_string(x.reloptions, ','),
         (SELECT string_agg(a.attstattarget::text, ',' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = x.indexrelid AND a.attstattarget >= 0),
         (SELECT p.qname || ' ' || p.label FROM pg_inherits h JOIN idx p ON p.indexrelid = h.inhparent WHERE h.inhrelid = x.indexrelid),
         obj_description(x.indexrelid, 'pg_class'))
FROM idx x
UNION ALL
-- triggers (not those PostgreSQL keeps for foreign keys)
SELECT r.relname, r.root, NULL, NULL, NULL,
       format('trigger %s %s def=%s enabled=%s cloned=%s comment=%s', r.qname, quote_ident(g.tgname), pg_get_triggerdef(g.oid), g.tgenabled,
         g.tgparentid <> 0, obj_description(g.oid, 'pg_trigger'))
FROM pg_trigger g JOIN rel r ON r.oid = g.tgrelid
WHERE NOT g.tgisinternal
UNION ALL
SELECT r.relname, r.root, NULL, NULL, NULL,
       format('rule %s %s def=%s enabled=%s comment=%s', r.qname, quote_ident(w.rulename), pg_get_ruledef(w.oid), w.ev_enabled,
         obj_description(w.oid, 'pg_rewrite'))
FROM pg_rewrite w JOIN rel r ON r.oid = w.ev_class WHERE w.rulename <> '_RETURN'
UNION ALL
SELECT r.relname, r.root, NULL, NULL, NULL,
       format('policy %s %s permissive=%s command=%s roles=%s using=%s check=%s comment=%s', r.qname, quote_ident(p.polname),
         p.polpermissive, p.polcmd,
         (SELECT string_agg(rn, ',' ORDER BY rn) FROM (SELECT CASE WHEN x = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x)::text) END AS rn
                                                       FROM unnest(p.polroles) x) u),
         pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid), obj_description(p.oid, 'pg_policy'))
FROM pg_policy p JOIN rel r ON r.oid = p.polrelid
UNION ALL
-- types: enums (values in order), composite, range, domains, base and shell types
SELECT NULL, NULL, NULL, NULL, NULL,
       format('%s %s %s comment=%s acl=%s',
         CASE t.typtype WHEN 'e' THEN 'enum' WHEN 'c' THEN 'composite type' WHEN 'r' THEN 'range type' WHEN 'm' THEN 'multirange type'
                        WHEN 'd' THEN 'domain' WHEN 'p' THEN 'shell type' ELSE 'base type' END,
         t.qname,
         CASE t.typtype
           WHEN 'e' THEN 'values=' || coalesce((SELECT string_agg(quote_literal(e.enumlabel), ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid), '')
           WHEN 'c' THEN 'attributes=(' || coalesce((SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
                                                      || CASE WHEN a.attcollation <> at.typcollation THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END, ', ' ORDER BY a.attnum)
                                                    FROM pg_attribute a JOIN pg_type at ON at.oid = a.atttypid
                                                    WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), '') || ')'
           WHEN 'r' THEN (SELECT format('subtype=%s opclass=%s collation=%s canonical=%s subdiff=%s multirange=%s', format_type(g.rngsubtype, NULL),
                                  (SELECT quote_ident(on2.nspname) || '.' || quote_ident(oc.opcname) FROM pg_opclass oc JOIN pg_namespace on2 ON on2.oid = oc.opcnamespace WHERE oc.oid = g.rngsubopc),
                                  CASE WHEN g.rngcollation <> 0 THEN g.rngcollation::regcollation::text END,
                                  nullif(g.rngcanonical::regproc::text, '-'), nullif(g.rngsubdiff::regproc::text, '-'), format_type(g.rngmultitypid, NULL))
                          FROM pg_range g WHERE g.rngtypid = t.oid)
           WHEN 'd' THEN format('base=%s collation=%s default=%s notnull=%s', format_type(t.typbasetype, t.typtypmod),
                                CASE WHEN t.typcollation <> (SELECT b.typcollation FROM pg_type b WHERE b.oid = t.typbasetype) THEN t.typcollation::regcollation::text END,
                                t.typdefault, t.typnotnull)
           WHEN 'b' THEN format('input=%s output=%s receive=%s send=%s length=%s byval=%s align=%s storage=%s category=%s',
                                t.typinput::regproc, t.typoutput::regproc, t.typreceive::regproc, t.typsend::regproc, t.typlen, t.typbyval,
                                t.typalign, t.typstorage, t.typcategory)
           ELSE '' END,
         obj_description(t.oid, 'pg_type'),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(coalesce(t.typacl, acldefault('T', t.typowner))) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> t.typowner) a))
FROM typ t WHERE t.typtype <> 'm'
UNION ALL
-- a domain's constraints
SELECT NULL, NULL, NULL, NULL, NULL,
       format('domain constraint %s %s def=%s validated=%s comment=%s', t.qname,
         CASE WHEN starts_with(k.conname, t.typname || '_') AND k.conname ~ '_check[0-9]*$' THEN '<auto:check(' || t.qname || ')>' ELSE quote_ident(k.conname) END,
         pg_get_constraintdef(k.oid), k.convalidated, obj_description(k.oid, 'pg_constraint'))
FROM pg_constraint k JOIN typ t ON t.oid = k.contypid
UNION ALL
-- functions, procedures and window functions as PostgreSQL prints them;
-- aggregates from pg_aggregate
SELECT NULL, NULL, NULL, NULL, NULL,
       format('%s %s %s comment=%s acl=%s',
         CASE f.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' WHEN 'w' THEN 'window function' ELSE 'function' END, f.qname,
         CASE WHEN f.prokind = 'a' THEN (
           SELECT format('returns=%s kind=%s directargs=%s sfunc=%s stype=%s sspace=%s finalfunc=%s finalextra=%s finalmodify=%s combinefunc=%s serialfunc=%s deserialfunc=%s msfunc=%s minvfunc=%s mstype=%s msspace=%s mfinalfunc=%s mfinalextra=%s mfinalmodify=%s sortop=%s initcond=%s minitcond=%s parallel=%s strict=%s',
             format_type(p.prorettype, NULL), g.aggkind, g.aggnumdirectargs, g.aggtransfn::regproc, format_type(g.aggtranstype, NULL), g.aggtransspace,
             nullif(g.aggfinalfn::regproc::text, '-'), g.aggfinalextra, g.aggfinalmodify, nullif(g.aggcombinefn::regproc::text, '-'),
             nullif(g.aggserialfn::regproc::text, '-'), nullif(g.aggdeserialfn::regproc::text, '-'), nullif(g.aggmtransfn::regproc::text, '-'),
             nullif(g.aggminvtransfn::regproc::text, '-'), CASE WHEN g.aggmtranstype <> 0 THEN format_type(g.aggmtranstype, NULL) END, g.aggmtransspace,
             nullif(g.aggmfinalfn::regproc::text, '-'), g.aggmfinalextra, g.aggmfinalmodify, nullif(g.aggsortop::regoperator::text, '0'),
             g.agginitval, g.aggminitval, p.proparallel, p.proisstrict)
           FROM pg_aggregate g JOIN pg_proc p ON p.oid = g.aggfnoid WHERE g.aggfnoid = f.oid)
         ELSE 'def=' || pg_get_functiondef(f.oid) END,
         obj_description(f.oid, 'pg_proc'),
         (SELECT string_agg(g, ',' ORDER BY g) FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
            || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS g
            FROM aclexplode(coalesce(f.proacl, acldefault('f', f.proowner))) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> f.proowner) a))
FROM fn f
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL,
       format('statistics %s.%s def=%s stattarget=%s comment=%s', quote_ident(n.nspname), quote_ident(s.stxname), pg_get_statisticsobjdef(s.oid),
         s.stxstattarget, obj_description(s.oid, 'pg_statistic_ext'))
FROM pg_statistic_ext s JOIN ns n ON n.oid = s.stxnamespace
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL,
       format('collation %s.%s provider=%s deterministic=%s collate=%s ctype=%s iculocale=%s encoding=%s comment=%s', quote_ident(n.nspname),
         quote_ident(c.collname), c.collprovider, c.collisdeterministic, c.collcollate, c.collctype, c.colliculocale, pg_encoding_to_char(c.collencoding),
         obj_description(c.oid, 'pg_collation'))
FROM pg_collation c JOIN ns n ON n.oid = c.collnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_collation'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL,
       format('operator %s function=%s commutator=%s negator=%s restrict=%s join=%s hashes=%s merges=%s comment=%s', o.oid::regoperator,
         o.oprcode::regproc, nullif(o.oprcom::regoperator::text, '0'), nullif(o.oprnegate::regoperator::text, '0'),
         nullif(o.oprrest::regproc::text, '-'), nullif(o.oprjoin::regproc::text, '-'), o.oprcanhash, o.oprcanmerge, obj_description(o.oid, 'pg_operator'))
FROM pg_operator o JOIN ns n ON n.oid = o.oprnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_operator'::regclass AND ext.objid = o.oid)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL,
       format('operator class %s.%s method=%s type=%s default=%s family=%s comment=%s', quote_ident(n.nspname), quote_ident(c.opcname),
         (SELECT amname FROM pg_am WHERE oid = c.opcmethod), format_type(c.opcintype, NULL), c.opcdefault,
         (SELECT quote_ident(fn2.nspname) || '.' || quote_ident(f.opfname) FROM pg_opfamily f JOIN pg_namespace fn2 ON fn2.oid = f.opfnamespace WHERE f.oid = c.opcfamily),
         obj_description(c.oid, 'pg_opclass'))
FROM pg_opclass c JOIN ns n ON n.oid = c.opcnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_opclass'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL,
       format('text search configuration %s.%s parser=%s comment=%s', quote_ident(n.nspname), quote_ident(c.cfgname), (SELECT quote_ident(prsname) FROM pg_ts_parser WHERE oid = c.cfgparser),
         obj_description(c.oid, 'pg_ts_config'))
FROM pg_ts_config c JOIN ns n ON n.oid = c.cfgnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_ts_config'::regclass AND ext.objid = c.oid)
`
