package pgcatalog

import "strings"

// QuoteIdent quotes a name exactly as PostgreSQL 15's quote_ident does,
// so that names written here match the catalog's keys: plain only when it
// starts with a lowercase letter or underscore, holds nothing but
// lowercase letters, digits and underscores, and is no keyword PostgreSQL
// reserves in any way.
func QuoteIdent(s string) string {
	plain := s != "" && !keywords[s]
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// keywords are PostgreSQL 15's keywords that are not unreserved
// (SELECT word FROM pg_get_keywords() WHERE catcode <> 'U'): quote_ident
// quotes them.
var keywords = map[string]bool{"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true, "as": true, "asc": true, "asymmetric": true, "authorization": true, "between": true, "bigint": true, "binary": true, "bit": true, "boolean": true, "both": true, "case": true, "cast": true, "char": true, "character": true, "check": true, "coalesce": true, "collate": true, "collation": true, "column": true, "concurrently": true, "constraint": true, "create": true, "cross": true, "current_catalog": true, "current_date": true, "current_role": true, "current_schema": true, "current_time": true, "current_timestamp": true, "current_user": true, "dec": true, "decimal": true, "default": true, "deferrable": true, "desc": true, "distinct": true, "do": true, "else": true, "end": true, "except": true, "exists": true, "extract": true, "false": true, "fetch": true, "float": true, "for": true, "foreign": true, "freeze": true, "from": true, "full": true, "grant": true, "greatest": true, "group": true, "grouping": true, "having": true, "ilike": true, "in": true, "initially": true, "inner": true, "inout": true, "int": true, "integer": true, "intersect": true, "interval": true, "into": true, "is": true, "isnull": true, "join": true, "lateral": true, "leading": true, "least": true, "left": true, "like": true, "limit": true, "localtime": true, "localtimestamp": true, "national": true, "natural": true, "nchar": true, "none": true, "normalize": true, "not": true, "notnull": true, "null": true, "nullif": true, "numeric": true, "offset": true, "on": true, "only": true, "or": true, "order": true, "out": true, "outer": true, "overlaps": true, "overlay": true, "placing": true, "position": true, "precision": true, "primary": true, "real": true, "references": true, "returning": true, "right": true, "row": true, "select": true, "session_user": true, "setof": true, "similar": true, "smallint": true, "some": true, "substring": true, "symmetric": true, "table": true, "tablesample": true, "then": true, "time": true, "timestamp": true, "to": true, "trailing": true, "treat": true, "trim": true, "true": true, "union": true, "unique": true, "user": true, "using": true, "values": true, "varchar": true, "variadic": true, "verbose": true, "when": true, "where": true, "window": true, "with": true, "xmlattributes": true, "xmlconcat": true, "xmlelement": true, "xmlexists": true, "xmlforest": true, "xmlnamespaces": true, "xmlparse": true, "xmlpi": true, "xmlroot": true, "xmlserialize": true, "xmltable": true}
