// Package catalogread is the one place that says what a read-only session
// may send the target database: a fixed set of catalog queries, reviewed
// here, whose inputs are bind parameters only. Nothing in it is derived
// from desired SQL: expressions of the desired schema are compared on the
// dev database, or as the text PostgreSQL prints for them, never evaluated
// on the target. database.OpenReadOnly refuses any other statement before
// it leaves the process.
package catalogread

import (
	"fmt"
	"regexp"
	"strings"
)

// Objects prints one row per object of schema $1: kind, name, definition,
// whether atlas manages it, and its table. $2 also lists the database's
// other user schemas. Names PostgreSQL generates print as <auto> so that an
// unnamed constraint compares equal to its generated name.
const Objects = `
WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname = $1::text),
ext AS (SELECT classid, objid FROM pg_depend WHERE deptype = 'e'),
rel AS (
  SELECT c.oid, c.relname, c.relkind, c.relpersistence, c.relispartition, c.relrowsecurity,
         c.relforcerowsecurity, c.reloptions, c.relreplident, quote_ident(c.relname) AS qname, c.relowner, c.relacl
  FROM pg_class c JOIN ns n ON n.oid = c.relnamespace
  WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_class'::regclass AND ext.objid = c.oid)
),
-- what is granted on each object that can be granted on, as it stands
-- (acl) and as the object starts (dflt): grantee:privilege, * when
-- grantable; the owner's and the session's own role's left out, as the
-- proof leaves them out (they are the deployment's, not the schema's)
grantable AS (
  SELECT CASE r.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' WHEN 'S' THEN 'sequence '
                        WHEN 'f' THEN 'foreign table ' ELSE 'table ' END || r.qname AS name,
         ' ON ' || CASE r.relkind WHEN 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || r.qname AS ident,
         CASE WHEN r.relkind = 'S' THEN '' ELSE r.relname END AS tbl, r.relowner AS owner,
         coalesce(r.relacl, CASE r.relkind WHEN 'S' THEN acldefault('s', r.relowner) ELSE acldefault('r', r.relowner) END) AS acl,
         CASE r.relkind WHEN 'S' THEN acldefault('s', r.relowner) ELSE acldefault('r', r.relowner) END AS dflt
  FROM rel r WHERE r.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  UNION ALL
  SELECT 'column ' || r.qname || '.' || quote_ident(a.attname), ' (' || quote_ident(a.attname) || ') ON TABLE ' || r.qname,
         r.relname, r.relowner, a.attacl, NULL::aclitem[]
  FROM rel r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  WHERE a.attacl IS NOT NULL
  UNION ALL
  SELECT CASE p.prokind WHEN 'p' THEN 'procedure ' WHEN 'a' THEN 'aggregate ' ELSE 'function ' END
           || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')',
         ' ON ROUTINE ' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')',
         '', p.proowner, coalesce(p.proacl, acldefault('f', p.proowner)), acldefault('f', p.proowner)
  FROM pg_proc p JOIN ns n ON n.oid = p.pronamespace
  WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'i')
  UNION ALL
  SELECT 'type ' || quote_ident(t.typname), ' ON TYPE ' || quote_ident(t.typname), '', t.typowner,
         coalesce(t.typacl, acldefault('T', t.typowner)), acldefault('T', t.typowner)
  FROM pg_type t JOIN ns n ON n.oid = t.typnamespace
  WHERE t.typtype IN ('e', 'd', 'c', 'r')
    AND (t.typtype <> 'c' OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
    AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_type'::regclass AND ext.objid = t.oid)
),
owned AS (
  SELECT d.objid AS seq, d.deptype, r.relname AS tbl, r.qname || '.' || quote_ident(a.attname) AS col,
         EXISTS (SELECT 1 FROM pg_attrdef ad JOIN pg_depend dd ON dd.classid = 'pg_attrdef'::regclass AND dd.objid = ad.oid
                 WHERE ad.adrelid = d.refobjid AND ad.adnum = d.refobjsubid AND dd.refclassid = 'pg_class'::regclass AND dd.refobjid = d.objid) AS serial
  FROM pg_depend d
  JOIN rel r ON r.oid = d.refobjid
  JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
  WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
    AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
),
seqparams AS (
  SELECT s.seqrelid, format('type=%s start=%s increment=%s min=%s max=%s cache=%s cycle=%s',
         format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle) AS p
  FROM pg_sequence s
),
con AS (
  SELECT k.oid, k.conname, k.contype, k.conindid, r.qname, r.relname,
         CASE WHEN (k.conname LIKE r.relname || '\_%' OR length(k.conname) >= 60)
                   AND k.conname ~ CASE k.contype WHEN 'p' THEN '_pkey[0-9]*$' WHEN 'u' THEN '_key[0-9]*$'
                                                  WHEN 'f' THEN '_fkey[0-9]*$' WHEN 'c' THEN '_check[0-9]*$'
                                                  WHEN 'x' THEN '_excl[0-9]*$' ELSE '^$' END
              THEN '<auto>:' || pg_get_constraintdef(k.oid) ELSE quote_ident(k.conname) END AS label
  FROM pg_constraint k JOIN rel r ON r.oid = k.conrelid
)
SELECT 'schema', quote_ident(n.nspname), NULL, false, '', NULL::text, NULL::text
FROM pg_namespace n
WHERE $2::boolean AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'public') AND n.nspname <> $1::text
  AND n.nspname NOT LIKE 'pg\_temp\_%' AND n.nspname NOT LIKE 'pg\_toast\_temp\_%'
  AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_namespace'::regclass AND ext.objid = n.oid)
UNION ALL
SELECT 'comment on schema', quote_ident(n.nspname), obj_description(n.oid, 'pg_namespace'), false, '', NULL::text, NULL::text FROM ns n
UNION ALL
SELECT 'extension', quote_ident(e.extname), CASE WHEN e.extversion IS DISTINCT FROM (SELECT a.default_version FROM pg_available_extensions a WHERE a.name = e.extname) THEN 'version=' || e.extversion END, false, '', NULL::text, NULL::text FROM pg_extension e WHERE e.extname <> 'plpgsql'
UNION ALL
SELECT 'table', r.qname, NULL, true, r.relname, NULL::text, NULL::text FROM rel r WHERE r.relkind IN ('r', 'p') AND NOT r.relispartition
UNION ALL
SELECT 'table property', r.qname,
       concat_ws(' ',
         CASE r.relpersistence WHEN 'u' THEN 'UNLOGGED' WHEN 't' THEN 'TEMPORARY' END,
         'PARTITION BY ' || pg_get_partkeydef(r.oid),
         'INHERITS (' || (SELECT string_agg(p.oid::regclass::text, ', ' ORDER BY i.inhseqno) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE i.inhrelid = r.oid) || ')',
         'WITH (' || array_to_string(r.reloptions, ', ') || ')',
         CASE r.relreplident WHEN 'n' THEN 'REPLICA IDENTITY NOTHING' WHEN 'f' THEN 'REPLICA IDENTITY FULL'
           WHEN 'i' THEN 'REPLICA IDENTITY USING INDEX ' || coalesce((SELECT quote_ident(ic.relname) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                                                                       WHERE i.indrelid = r.oid AND i.indisreplident), '') END),
       false, r.relname, NULL::text, NULL::text
FROM rel r
WHERE r.relkind IN ('r', 'p') AND NOT r.relispartition
  AND (r.relpersistence <> 'p' OR pg_get_partkeydef(r.oid) IS NOT NULL
       OR r.reloptions IS NOT NULL OR r.relreplident NOT IN ('d')
       OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = r.oid))
UNION ALL
SELECT 'row level security', r.qname, 'ENABLE', false, r.relname, NULL::text, NULL::text
FROM rel r WHERE r.relkind IN ('r', 'p') AND r.relrowsecurity
UNION ALL
SELECT 'forced row level security', r.qname, 'FORCE', false, r.relname, NULL::text, NULL::text
FROM rel r WHERE r.relkind IN ('r', 'p') AND r.relforcerowsecurity
UNION ALL
-- a partition's table is its parent's: excluding or protecting the parent
-- takes in its partitions. Deps: the parent, qualified when it is of
-- another schema (regclass under the schema's own search_path).
SELECT 'partition', r.qname,
       'PARTITION OF ' || i.inhparent::regclass::text || ' ' || pg_get_expr(c.relpartbound, r.oid)
       || coalesce(' PARTITION BY ' || pg_get_partkeydef(r.oid), ''), false, p.relname, NULL::text, 'table ' || i.inhparent::regclass::text
FROM rel r JOIN pg_class c ON c.oid = r.oid JOIN pg_inherits i ON i.inhrelid = r.oid JOIN pg_class p ON p.oid = i.inhparent
WHERE r.relkind IN ('r', 'p') AND r.relispartition
UNION ALL
-- what a partition has of its own, not from its parent, is listed under
-- kinds of their own and planned on it: its indexes and constraints, its
-- columns' own NOT NULL, defaults and comments, its properties. Inherited
-- ones (an index attached to its parent's, a constraint with coninhcount >
-- 0 or a parent constraint) come with the parent. Their table is the
-- parent's, as a partition's is; a column's deps are its partition and,
-- in the same schema, its parent's column.
SELECT 'partition index', quote_ident(ic.relname) || ' on ' || t.qname,
       pg_get_indexdef(i.indexrelid) || coalesce(' comment=' || obj_description(ic.oid, 'pg_class'), ''), false,
       (SELECT p.relname FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent WHERE h.inhrelid = t.oid), quote_ident(ic.relname), 'partition ' || t.qname
FROM pg_index i JOIN rel t ON t.oid = i.indrelid AND t.relispartition JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE (NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
       AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = t.oid AND k.contype IN ('p', 'u', 'x')))
   OR obj_description(ic.oid, 'pg_class') IS NOT NULL
UNION ALL
SELECT 'partition constraint', k.label || ' on ' || k.qname, k.contype::text || ' ' || pg_get_constraintdef(k.oid), false,
       (SELECT p.relname FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent WHERE h.inhrelid = r.oid), quote_ident(k.conname), 'partition ' || k.qname
FROM con k JOIN pg_constraint c ON c.oid = k.oid JOIN rel r ON r.oid = c.conrelid
WHERE r.relispartition AND c.conparentid = 0 AND c.coninhcount = 0
UNION ALL
SELECT 'partition column', r.qname || '.' || quote_ident(a.attname),
       concat_ws(' ', CASE WHEN a.attnotnull AND NOT pa.attnotnull THEN 'NOT NULL' END,
         'DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), 'COMMENT ' || quote_literal(col_description(r.oid, a.attnum))),
       false, pa_rel.relname, NULL::text,
       concat_ws(E'\n', 'partition ' || r.qname,
         CASE WHEN pa_rel.relnamespace = (SELECT oid FROM ns) THEN 'column ' || quote_ident(pa_rel.relname) || '.' || quote_ident(a.attname) END)
FROM rel r JOIN pg_inherits i ON i.inhrelid = r.oid
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_attribute pa ON pa.attrelid = i.inhparent AND pa.attname = a.attname JOIN pg_class pa_rel ON pa_rel.oid = i.inhparent
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_attrdef pd ON pd.adrelid = pa.attrelid AND pd.adnum = pa.attnum
WHERE r.relkind IN ('r', 'p') AND r.relispartition
  AND (a.attnotnull AND NOT pa.attnotnull
       OR pg_get_expr(d.adbin, d.adrelid) IS DISTINCT FROM pg_get_expr(pd.adbin, pd.adrelid)
       OR col_description(r.oid, a.attnum) IS NOT NULL)
UNION ALL
SELECT 'partition property', r.qname,
       concat_ws(' ', CASE r.relpersistence WHEN 'u' THEN 'UNLOGGED' END, 'WITH (' || array_to_string(r.reloptions, ', ') || ')',
         CASE r.relreplident WHEN 'n' THEN 'REPLICA IDENTITY NOTHING' WHEN 'f' THEN 'REPLICA IDENTITY FULL' WHEN 'i' THEN 'REPLICA IDENTITY USING INDEX' END,
         'COMMENT ' || quote_literal(obj_description(r.oid, 'pg_class'))),
       false, (SELECT p.relname FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent WHERE h.inhrelid = r.oid), NULL::text, 'partition ' || r.qname
FROM rel r
WHERE r.relkind IN ('r', 'p') AND r.relispartition AND (r.relpersistence <> 'p' OR r.reloptions IS NOT NULL OR r.relreplident <> 'd'
                            OR obj_description(r.oid, 'pg_class') IS NOT NULL)
UNION ALL
SELECT 'foreign table', r.qname, NULL, false, r.relname, NULL::text, NULL::text FROM rel r WHERE r.relkind = 'f'
UNION ALL
SELECT 'column', r.qname || '.' || quote_ident(a.attname),
       format('type=%s notnull=%s%s%s%s%s%s', format_type(a.atttypid, a.atttypmod), a.attnotnull,
         coalesce(' default=' || pg_get_expr(d.adbin, d.adrelid), ''),
         CASE WHEN a.attgenerated <> '' THEN ' generated=' || a.attgenerated::text ELSE '' END,
         CASE WHEN a.attidentity <> '' THEN ' identity=' || a.attidentity::text || coalesce(' (' || (
                SELECT sp.p FROM owned o JOIN seqparams sp ON sp.seqrelid = o.seq
                WHERE o.deptype = 'i' AND o.col = r.qname || '.' || quote_ident(a.attname)) || ')', '') ELSE '' END,
         CASE WHEN a.attcollation <> t.typcollation AND a.attcollation <> 0
              THEN ' collate=' || (SELECT quote_ident(collname) FROM pg_collation WHERE oid = a.attcollation) ELSE '' END,
         coalesce(' comment=' || col_description(r.oid, a.attnum), '')),
       true, r.relname, NULL::text, NULL::text
FROM rel r
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE r.relkind IN ('r', 'p') AND NOT r.relispartition
UNION ALL
-- pg_get_constraintdef leaves out the storage parameters of a key's index:
-- written where ADD CONSTRAINT takes them, before DEFERRABLE.
SELECT 'constraint', k.label || ' on ' || k.qname,
       k.contype::text || ' ' || regexp_replace(pg_get_constraintdef(k.oid), '( DEFERRABLE( INITIALLY DEFERRED)?)?$',
         coalesce(replace(' WITH (' || array_to_string(ic.reloptions, ', ') || ')', '\', '\\'), '') || '\1'),
       true, k.relname, quote_ident(k.conname), 'table ' || k.qname
FROM con k JOIN rel r ON r.qname = k.qname LEFT JOIN pg_class ic ON ic.oid = k.conindid AND k.contype IN ('u', 'p', 'x')
WHERE NOT r.relispartition AND k.contype NOT IN ('c', 'f')
UNION ALL
-- foreign keys too: atlas loses MATCH FULL, DEFERRABLE and NOT VALID, and a
-- key they reference cannot be dropped under them. Deps: the table, the
-- referenced table, then every column on either side.
SELECT 'foreign key', k.label || ' on ' || k.qname, pg_get_constraintdef(k.oid), false, k.relname, quote_ident(k.conname),
       concat_ws(E'\n', 'table ' || k.qname, 'table ' || ft.qname,
         (SELECT string_agg('column ' || k.qname || '.' || quote_ident(a.attname), E'\n' ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)),
         (SELECT string_agg('column ' || ft.qname || '.' || quote_ident(a.attname), E'\n' ORDER BY a.attnum)
          FROM pg_attribute a WHERE a.attrelid = c.confrelid AND a.attnum = ANY (c.confkey)))
FROM con k JOIN rel r ON r.qname = k.qname JOIN pg_constraint c ON c.oid = k.oid
CROSS JOIN LATERAL (SELECT CASE WHEN f.relnamespace = (SELECT oid FROM ns) THEN quote_ident(f.relname)
                                ELSE quote_ident(fn.nspname) || '.' || quote_ident(f.relname) END AS qname
                    FROM pg_class f JOIN pg_namespace fn ON fn.oid = f.relnamespace WHERE f.oid = c.confrelid) ft
WHERE NOT r.relispartition AND k.contype = 'f' AND c.conislocal
UNION ALL
-- checks are planned here, not by atlas: atlas reads neither a check on no
-- column nor NOT VALID. Inherited checks come with their parent.
SELECT 'check constraint', k.label || ' on ' || k.qname, pg_get_constraintdef(k.oid), false, k.relname, quote_ident(k.conname), 'table ' || k.qname
FROM con k JOIN rel r ON r.qname = k.qname JOIN pg_constraint c ON c.oid = k.oid
WHERE NOT r.relispartition AND k.contype = 'c' AND c.conislocal
UNION ALL
SELECT 'comment on constraint', k.label || ' on ' || k.qname, obj_description(k.oid, 'pg_constraint'), false, k.relname, quote_ident(k.conname) || ' ON ' || k.qname, NULL::text
FROM con k WHERE obj_description(k.oid, 'pg_constraint') IS NOT NULL
UNION ALL
SELECT 'index', lbl || ' on ' || t.qname,
       replace(pg_get_indexdef(i.indexrelid), 'INDEX ' || quote_ident(ic.relname) || ' ON ', 'INDEX ' || lbl || ' ON ')
       || coalesce(' comment=' || obj_description(ic.oid, 'pg_class'), ''),
       true, t.relname, quote_ident(ic.relname), 'table ' || t.qname
FROM pg_index i
JOIN rel t ON t.oid = i.indrelid
JOIN pg_class ic ON ic.oid = i.indexrelid
CROSS JOIN LATERAL (SELECT CASE WHEN (ic.relname LIKE t.relname || '\_%' OR length(ic.relname) >= 60)
                                      AND ic.relname ~ '_(idx|key|pkey|excl)[0-9]*$'
                                THEN '<auto>:' || pg_get_indexdef(i.indexrelid, 1, true) ELSE quote_ident(ic.relname) END AS lbl) l
WHERE NOT t.relispartition AND t.relkind IN ('r', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u', 'x'))
UNION ALL
SELECT 'index on materialized view', quote_ident(ic.relname) || ' on ' || t.qname, pg_get_indexdef(i.indexrelid), false, '',
       quote_ident(ic.relname), 'materialized view ' || t.qname
FROM pg_index i JOIN rel t ON t.oid = i.indrelid AND t.relkind = 'm' JOIN pg_class ic ON ic.oid = i.indexrelid
UNION ALL
SELECT CASE r.relkind WHEN 'v' THEN 'view' ELSE 'materialized view' END, r.qname,
       coalesce('WITH (' || array_to_string(r.reloptions, ', ') || ') ', '') || 'AS' || pg_get_viewdef(r.oid, true), false, '', NULL::text,
       (SELECT string_agg(DISTINCT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' ELSE 'table ' END || quote_ident(c.relname), E'\n')
        FROM pg_rewrite w JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
        JOIN pg_class c ON c.oid = d.refobjid AND d.refclassid = 'pg_class'::regclass
        WHERE w.ev_class = r.oid AND c.oid <> r.oid AND c.relnamespace = (SELECT oid FROM ns))
FROM rel r WHERE r.relkind IN ('v', 'm')
UNION ALL
SELECT 'comment on ' || CASE r.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' ELSE 'relation' END,
       r.qname, obj_description(r.oid, 'pg_class'), false, '', NULL::text, NULL::text
FROM rel r WHERE r.relkind IN ('v', 'm', 'S', 'c', 'f') AND obj_description(r.oid, 'pg_class') IS NOT NULL
UNION ALL
SELECT 'comment on column', r.qname || '.' || quote_ident(a.attname), col_description(r.oid, a.attnum), false, '', NULL::text, NULL::text
FROM rel r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE r.relkind IN ('v', 'm', 'c', 'f') AND col_description(r.oid, a.attnum) IS NOT NULL
UNION ALL
-- sequences are planned here (atlas reads only a serial column's); a
-- serial's own sequence (owned by a column whose default is its nextval,
-- named as atlas reads a serial's) is created and dropped by atlas with
-- its column. Any other sequence is the desired SQL's: by its name, its
-- owner a property.
SELECT 'sequence', CASE WHEN atlas THEN 'owned by ' || o.col ELSE r.qname END,
       sp.p || CASE WHEN o.col IS NOT NULL AND NOT atlas THEN ' ownedby=' || o.col ELSE '' END, false, coalesce(o.tbl, ''), r.qname, NULL::text
FROM rel r JOIN seqparams sp ON sp.seqrelid = r.oid LEFT JOIN owned o ON o.seq = r.oid,
     LATERAL (SELECT coalesce(o.serial AND r.relname ~ '^[A-Za-z0-9_$]+_[A-Za-z0-9_$]+_seq$', false) AS atlas) k
WHERE r.relkind = 'S' AND coalesce(o.deptype, 'a') <> 'i'
UNION ALL
-- identity columns, with their sequence's options, which atlas loses
SELECT 'identity', o.col, 'generated=' || a.attidentity::text || ' ' || sp.p, false, o.tbl, quote_ident(a.attname), 'table ' || r.qname
FROM owned o JOIN seqparams sp ON sp.seqrelid = o.seq JOIN rel r ON r.relname = o.tbl
JOIN pg_attribute a ON a.attrelid = r.oid AND r.qname || '.' || quote_ident(a.attname) = o.col
WHERE o.deptype = 'i' AND NOT r.relispartition
UNION ALL
SELECT CASE t.typtype WHEN 'e' THEN 'enum' WHEN 'd' THEN 'domain' WHEN 'c' THEN 'composite type'
                      WHEN 'r' THEN 'range type' WHEN 'b' THEN 'base type' ELSE 'type' END,
       quote_ident(t.typname),
       CASE t.typtype
         WHEN 'e' THEN '(' || (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) || ')'
         WHEN 'd' THEN format_type(t.typbasetype, t.typtypmod)
                       || coalesce(' COLLATE ' || (SELECT quote_ident(collname) FROM pg_collation WHERE oid = t.typcollation AND t.typcollation <> 100), '')
                       || coalesce(' DEFAULT ' || t.typdefault, '')
                       || CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
                       || coalesce(' ' || (SELECT string_agg(CASE WHEN k.conname LIKE t.typname || '\_%' AND k.conname ~ '_check[0-9]*$' THEN ''
                                                               ELSE 'CONSTRAINT ' || quote_ident(k.conname) || ' ' END || pg_get_constraintdef(k.oid), ' ' ORDER BY pg_get_constraintdef(k.oid), k.conname)
                                          FROM pg_constraint k WHERE k.contypid = t.oid), '')
         WHEN 'c' THEN '(' || (SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)
                                                 || coalesce(' COLLATE ' || (SELECT quote_ident(collname) FROM pg_collation WHERE oid = a.attcollation
                                                                              AND a.attcollation <> (SELECT typcollation FROM pg_type WHERE oid = a.atttypid)), ''), ', ' ORDER BY a.attnum)
                                FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped) || ')'
         WHEN 'r' THEN (SELECT 'subtype=' || format_type(rngsubtype, NULL) || coalesce(' subtype_diff=' || nullif(rngsubdiff::regproc::text, '-'), '')
                        || coalesce(' canonical=' || nullif(rngcanonical::regproc::text, '-'), '') FROM pg_range WHERE rngtypid = t.oid)
         ELSE 'typtype=' || t.typtype::text END,
       t.typtype = 'e', '', NULL::text,
       CASE WHEN t.typtype = 'd' THEN concat_ws(E'\n',
         'base=' || format_type(t.typbasetype, t.typtypmod) || coalesce(' COLLATE ' || (SELECT quote_ident(collname) FROM pg_collation WHERE oid = t.typcollation AND t.typcollation <> 100), ''),
         'default=' || t.typdefault,
         CASE WHEN t.typnotnull THEN 'notnull=' END,
         (SELECT string_agg('check=' || quote_ident(k.conname) || ' ' || pg_get_constraintdef(k.oid), E'\n' ORDER BY k.conname) FROM pg_constraint k WHERE k.contypid = t.oid)) END
FROM pg_type t JOIN ns n ON n.oid = t.typnamespace
WHERE t.typtype IN ('e', 'd', 'c', 'r', 'b')
  AND (t.typtype <> 'c' OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
  AND (t.typtype <> 'b' OR t.typelem = 0 OR NOT EXISTS (SELECT 1 FROM pg_type e WHERE e.oid = t.typelem AND e.typarray = t.oid))
  AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_type'::regclass AND ext.objid = t.oid)
UNION ALL
SELECT 'comment on type', quote_ident(t.typname), obj_description(t.oid, 'pg_type'), false, '', NULL::text, NULL::text
FROM pg_type t JOIN ns n ON n.oid = t.typnamespace
WHERE obj_description(t.oid, 'pg_type') IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_type'::regclass AND ext.objid = t.oid)
UNION ALL
SELECT CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' WHEN 'w' THEN 'window function' ELSE 'function' END,
       quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       CASE WHEN p.prokind = 'a' THEN (SELECT format('sfunc=%s stype=%s finalfunc=%s initcond=%s', a.aggtransfn, format_type(a.aggtranstype, NULL), a.aggfinalfn, a.agginitval) FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
            ELSE pg_get_functiondef(p.oid) END,
       false, '', NULL::text,
       -- the routines its body uses (a SQL-standard body is parsed where
       -- it is created, so they come first), of another schema qualified
       (SELECT string_agg(DISTINCT CASE r.prokind WHEN 'p' THEN 'procedure ' WHEN 'a' THEN 'aggregate ' WHEN 'w' THEN 'window function ' ELSE 'function ' END
                 || CASE WHEN r.pronamespace = p.pronamespace THEN '' ELSE quote_ident(rn.nspname) || '.' END
                 || quote_ident(r.proname) || '(' || pg_get_function_identity_arguments(r.oid) || ')', E'\n')
        FROM pg_depend d JOIN pg_proc r ON r.oid = d.refobjid JOIN pg_namespace rn ON rn.oid = r.pronamespace
        WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.refclassid = 'pg_proc'::regclass
          AND d.deptype = 'n' AND r.oid <> p.oid)
FROM pg_proc p JOIN ns n ON n.oid = p.pronamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
  -- a range type's constructors belong to the type
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'i')
UNION ALL
SELECT 'comment on function', quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')', obj_description(p.oid, 'pg_proc'), false, '', NULL::text, NULL::text
FROM pg_proc p JOIN ns n ON n.oid = p.pronamespace
WHERE obj_description(p.oid, 'pg_proc') IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_proc'::regclass AND ext.objid = p.oid)
UNION ALL
SELECT 'trigger', quote_ident(g.tgname) || ' on ' || r.qname,
       pg_get_triggerdef(g.oid) || CASE g.tgenabled WHEN 'O' THEN '' ELSE ' enabled=' || g.tgenabled::text END, false, r.relname,
       quote_ident(g.tgname) || ' ON ' || r.qname, NULL::text
FROM pg_trigger g JOIN rel r ON r.oid = g.tgrelid
WHERE NOT g.tgisinternal AND g.tgparentid = 0
UNION ALL
SELECT 'comment on trigger', quote_ident(g.tgname) || ' on ' || r.qname, obj_description(g.oid, 'pg_trigger'), false, r.relname, quote_ident(g.tgname) || ' ON ' || r.qname, NULL::text
FROM pg_trigger g JOIN rel r ON r.oid = g.tgrelid
WHERE NOT g.tgisinternal AND obj_description(g.oid, 'pg_trigger') IS NOT NULL
UNION ALL
SELECT 'rule', quote_ident(w.rulename) || ' on ' || r.qname, pg_get_ruledef(w.oid, true), false, r.relname, NULL::text, NULL::text
FROM pg_rewrite w JOIN rel r ON r.oid = w.ev_class WHERE w.rulename <> '_RETURN'
UNION ALL
SELECT 'policy', quote_ident(p.polname) || ' on ' || r.qname,
       format('AS %s FOR %s TO %s%s%s', CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
         CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
         (SELECT string_agg(rn, ', ' ORDER BY rn) FROM (SELECT CASE WHEN x = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x)::text) END AS rn FROM unnest(p.polroles) x) u),
         coalesce(' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')', ''),
         coalesce(' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '')),
       false, r.relname, quote_ident(p.polname) || ' ON ' || r.qname, NULL::text
FROM pg_policy p JOIN rel r ON r.oid = p.polrelid
UNION ALL
SELECT 'comment on policy', quote_ident(p.polname) || ' on ' || r.qname, obj_description(p.oid, 'pg_policy'), false, r.relname, quote_ident(p.polname) || ' ON ' || r.qname, NULL::text
FROM pg_policy p JOIN rel r ON r.oid = p.polrelid WHERE obj_description(p.oid, 'pg_policy') IS NOT NULL
UNION ALL
SELECT 'privileges', g.name,
       (SELECT coalesce(string_agg(e, ',' ORDER BY e), '') FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
          || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS e
          FROM aclexplode(g.acl) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> g.owner) a),
       false, g.tbl, g.ident,
       (SELECT coalesce(string_agg(e, E'\n' ORDER BY e), '') FROM (SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)::text) END
          || ':' || x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END AS e
          FROM aclexplode(g.dflt) x WHERE x.grantee <> current_user::text::regrole::oid AND pg_get_userbyid(x.grantee)::text IS DISTINCT FROM nullif(current_setting('ptah.target_role', true), '') AND x.grantee <> g.owner) a)
FROM grantable g
UNION ALL
SELECT 'statistics', quote_ident(s.stxname), pg_get_statisticsobjdef(s.oid), false, '', NULL::text, NULL::text
FROM pg_statistic_ext s JOIN ns n ON n.oid = s.stxnamespace
UNION ALL
SELECT 'collation', quote_ident(c.collname),
       -- what CREATE COLLATION takes (colliculocale is colllocale from 17)
       format('(provider = %s, %s%s)', CASE c.collprovider WHEN 'i' THEN 'icu' WHEN 'c' THEN 'libc' ELSE c.collprovider::text END,
         CASE WHEN c.collprovider = 'i' THEN format('locale = %L', coalesce(to_jsonb(c) ->> 'colliculocale', to_jsonb(c) ->> 'colllocale'))
              ELSE format('lc_collate = %L, lc_ctype = %L', c.collcollate, c.collctype) END,
         CASE WHEN NOT c.collisdeterministic THEN ', deterministic = false' ELSE '' END),
       false, '', NULL::text, NULL::text
FROM pg_collation c JOIN ns n ON n.oid = c.collnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_collation'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT 'operator', o.oprname || '(' || format_type(o.oprleft, NULL) || ', ' || format_type(o.oprright, NULL) || ')', NULL, false, '', NULL::text, NULL::text
FROM pg_operator o JOIN ns n ON n.oid = o.oprnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_operator'::regclass AND ext.objid = o.oid)
UNION ALL
SELECT 'operator class', quote_ident(c.opcname), NULL, false, '', NULL::text, NULL::text
FROM pg_opclass c JOIN ns n ON n.oid = c.opcnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_opclass'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT 'text search configuration', quote_ident(c.cfgname), NULL, false, '', NULL::text, NULL::text
FROM pg_ts_config c JOIN ns n ON n.oid = c.cfgnamespace
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_ts_config'::regclass AND ext.objid = c.oid)
UNION ALL
SELECT 'event trigger', quote_ident(e.evtname), e.evtevent || ' ' || e.evtfoid::regproc::text, false, '', NULL::text, NULL::text
FROM pg_event_trigger e
WHERE NOT EXISTS (SELECT 1 FROM ext WHERE ext.classid = 'pg_event_trigger'::regclass AND ext.objid = e.oid)
`

// The statements ptah's own code sends a read-only session.
const (
	// SetSearchPath sets search_path for the rest of the transaction, so
	// that definitions print as they do on the dev database, and turns JIT
	// off for it: the catalog reads are costed high enough for PostgreSQL
	// to compile them to machine code, which cost 0.7 s of a 1.2 s read of
	// 2,000 objects, for a query that runs once.
	SetSearchPath = "SELECT set_config('search_path', $1, true), set_config('jit', 'off', true)"
	// SetLockTimeout bounds every lock wait of the session ($2 false) or of
	// the transaction ($2 true) to $1 milliseconds.
	SetLockTimeout = "SELECT set_config('lock_timeout', $1, $2)"
	// The ptah writer lock, taken to read under it (apply --dry-run,
	// migrations status).
	WriterLock        = "SELECT pg_advisory_lock($1)"
	WriterUnlock      = "SELECT pg_advisory_unlock($1)"
	WriterLockXact    = "SELECT pg_advisory_xact_lock($1)"
	SchemaExists      = "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)"
	DevSessionSeen    = "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1)"
	DevDatabaseSeen   = "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)"
	RevisionTableSeen = "SELECT to_regclass($1) IS NOT NULL"
	RevisionHistory   = "SELECT version, name, checksum, applied_at, dirty FROM ptah.migration_revisions ORDER BY version"
	// CrossSchemaViews lists the relations of the managed schemas $2 that
	// the views of schema $1 read.
	CrossSchemaViews = `
SELECT DISTINCT CASE v.relkind WHEN 'v' THEN 'view ' ELSE 'materialized view ' END || quote_ident(v.relname),
       CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' ELSE 'table ' END || quote_ident(cn.nspname) || '.' || quote_ident(c.relname)
FROM pg_class v
JOIN pg_namespace vn ON vn.oid = v.relnamespace AND vn.nspname = $1
JOIN pg_rewrite w ON w.ev_class = v.oid
JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass
JOIN pg_class c ON c.oid = d.refobjid
JOIN pg_namespace cn ON cn.oid = c.relnamespace AND cn.nspname = ANY($2) AND cn.nspname <> $1
WHERE v.relkind IN ('v', 'm')`
	// InvalidIndexes lists the invalid indexes of schema $1, their tables,
	// the constraint owning each ('' for none) and whether it is a
	// partitioned table's (invalid until every partition has an index
	// attached to it, not after a failed build).
	InvalidIndexes = `
SELECT c.relname, t.relname,
       coalesce((SELECT k.conname FROM pg_constraint k WHERE k.conindid = c.oid AND k.conrelid = t.oid AND k.contype IN ('p', 'u', 'x')), ''),
       c.relkind = 'I'
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND NOT i.indisvalid
ORDER BY c.relname`

	// InheritedColumns lists the columns of schema $1's inheriting tables
	// (not partitions) that the table does not declare itself: table,
	// column.
	InheritedColumns = `
SELECT t.relname, a.attname
FROM pg_attribute a
JOIN pg_class t ON t.oid = a.attrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = $1 AND t.relkind IN ('r', 'p') AND NOT t.relispartition
  AND a.attnum > 0 AND NOT a.attisdropped AND a.attinhcount > 0 AND NOT a.attislocal
ORDER BY 1, a.attnum`

	// Roles lists the target's roles but PostgreSQL's own, for the dev
	// server to have them too (devdb.Server.MirrorRoles).
	Roles = "SELECT rolname FROM pg_roles WHERE rolname !~ '^pg_' ORDER BY 1"

	// RunsAs is the role ptah runs as on the target.
	RunsAs = "SELECT current_user"
	// SetTargetRole names the target's role in the dev database's
	// transaction ($1), for the grants to it to be left out there too: a
	// desired grant to the role ptah runs as on the target is one the
	// target's reading never shows (as the owner, it holds every
	// privilege already).
	SetTargetRole = "SELECT set_config('ptah.target_role', $1, true)"

	// BorrowedSequences lists the columns of schema $1 whose default is
	// nextval of a sequence the column does not own (a child table's
	// column inheriting its parent's serial default, a sequence shared by
	// several tables): table, column, default.
	BorrowedSequences = `
SELECT t.relname, a.attname, pg_get_expr(d.adbin, d.adrelid)
FROM pg_attrdef d
JOIN pg_class t ON t.oid = d.adrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
WHERE n.nspname = $1 AND t.relkind IN ('r', 'p') AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend s JOIN pg_depend o ON o.objid = s.refobjid AND o.classid = 'pg_class'::regclass
                  WHERE s.classid = 'pg_attrdef'::regclass AND s.objid = d.oid AND s.refclassid = 'pg_class'::regclass
                    AND o.refobjid = d.adrelid AND o.refobjsubid = d.adnum AND o.deptype IN ('a', 'i'))
ORDER BY 1, 2`
)

// IdentityUnused reads, for the identity column $3 (as DDL writes it) of
// table $2 (likewise) of schema $1, the table's qualified name, the
// column's name and whether its sequence has never generated a value: not
// called since it was created, and still at its start. A sequence's
// position is only read by selecting from it; query_to_xml runs that
// select, a read of a catalog-named relation, inside this one statement.
const IdentityUnused = `
SELECT t.name, a.attname,
       coalesce((xpath('/row/unused/text()', query_to_xml(format('SELECT NOT is_called AND last_value = %s AS unused FROM %s', p.seqstart, s.seq), false, true, '')))[1]::text = 'true', false)
FROM (SELECT format('%I.%s', $1::text, $2::text) AS name) t
JOIN pg_attribute a ON a.attrelid = t.name::regclass AND quote_ident(a.attname) = $3 AND NOT a.attisdropped
CROSS JOIN LATERAL (SELECT pg_get_serial_sequence(t.name, a.attname)::regclass AS seq) s
JOIN pg_sequence p ON p.seqrelid = s.seq`

// ptahStatements are the statements of ptah's own code above.
var ptahStatements = []string{Objects, SetSearchPath, SetLockTimeout, WriterLock, WriterUnlock, WriterLockXact,
	SchemaExists, DevSessionSeen, DevDatabaseSeen, RevisionTableSeen, RevisionHistory, CrossSchemaViews, InvalidIndexes, BorrowedSequences, InheritedColumns, Roles, RunsAs, SetTargetRole, IdentityUnused, Rendering}

// DriverStatements are what pgx sends by itself: a ping and the ends of a
// read-only transaction. They never pass through Check (pgx writes them
// below database/sql), and they are listed so that a test reading the
// server's statement log can hold every statement to this set.
var DriverStatements = []string{
	"-- ping",
	"begin isolation level repeatable read read only",
	"begin read only",
	"begin",
	"commit",
	"rollback",
}

// paramList matches a list of parameter placeholders, which atlas writes as
// long as the list of tables it inspects.
var paramList = regexp.MustCompile(`\$[0-9]+(?:, \$[0-9]+)*`)

const anyParams = "$…"

// normal is q with every list of placeholders written as one.
func normal(q string) string { return paramList.ReplaceAllString(q, anyParams) }

var reviewed = func() map[string]bool {
	m := map[string]bool{}
	for _, q := range ptahStatements {
		m[normal(q)] = true
	}
	for _, q := range atlasStatements {
		m[normal(strings.ReplaceAll(q, "%s", "$1"))] = true
	}
	for _, q := range DriverStatements {
		m[q] = true
	}
	return m
}()

// Reviewed reports whether query is one of the reviewed statements, up to
// the length of its placeholder lists.
func Reviewed(query string) bool { return reviewed[normal(query)] }

// Check refuses a statement that is not reviewed, naming its start: a
// read-only operation that tries to send one has a bug, and the statement
// does not reach the server.
func Check(query string) error {
	if Reviewed(query) {
		return nil
	}
	start := strings.Join(strings.Fields(query), " ")
	if r := []rune(start); len(r) > 60 {
		start = string(r[:57]) + "..."
	}
	return fmt.Errorf("a read-only session sends the target only the catalog reads of package catalogread, and this statement is not one of them: %q (a bug in ptah: report it)", start)
}
