// Package schema is ptah's declarative engine on atlas: it loads desired SQL
// into a fresh database of a dev server (never the target, which it only
// reads), inspects it and the managed schema the same way, and
// turns the diff into a plan of statements with severity and reason. It
// applies a plan only to the state the plan was computed from, under the ptah
// writer lock, in one transaction.
package schema
