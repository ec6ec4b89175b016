package describe

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "ptah.run/operator/operator/api/v1alpha1"
)

// Events prints, oldest first, the Events recorded on the schema and on the
// approvals that name it (an approval that went stale carries its own).
func (r Reader) Events(ctx context.Context, w io.Writer, name string, now time.Time) error {
	evs, err := r.EventList(ctx, name)
	if err != nil {
		return err
	}
	return writeEvents(w, "ptahschema "+name+" or its approvals", evs.Items, now)
}

// EventList is the Events Events prints, oldest first.
func (r Reader) EventList(ctx context.Context, name string) (*corev1.EventList, error) {
	if _, err := r.schema(ctx, name); err != nil {
		return nil, err
	}
	var approvals v1alpha1.PtahSchemaApprovalList
	if err := r.Client.List(ctx, &approvals, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("list ptahschemaapprovals in namespace %s: %w", r.Namespace, err)
	}
	on := map[string]bool{v1alpha1.KindPtahSchema + "/" + name: true}
	for _, a := range approvals.Items {
		if a.Spec.SchemaName == name {
			on[v1alpha1.KindPtahSchemaApproval+"/"+a.Name] = true
		}
	}
	return r.events(ctx, on)
}

// MigrationEvents prints, oldest first, the Events recorded on the
// PtahMigration and on the approvals and acknowledgments that name it.
func (r Reader) MigrationEvents(ctx context.Context, w io.Writer, name string, now time.Time) error {
	evs, err := r.MigrationEventList(ctx, name)
	if err != nil {
		return err
	}
	return writeEvents(w, "ptahmigration "+name+" or its approvals and acknowledgments", evs.Items, now)
}

// MigrationEventList is the Events MigrationEvents prints, oldest first.
func (r Reader) MigrationEventList(ctx context.Context, name string) (*corev1.EventList, error) {
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, &v1alpha1.PtahMigration{}); err != nil {
		return nil, fmt.Errorf("read ptahmigration %s in namespace %s: %w", name, r.Namespace, err)
	}
	on := map[string]bool{v1alpha1.KindPtahMigration + "/" + name: true}
	var approvals v1alpha1.PtahMigrationApprovalList
	if err := r.Client.List(ctx, &approvals, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("list ptahmigrationapprovals in namespace %s: %w", r.Namespace, err)
	}
	for _, a := range approvals.Items {
		if a.Spec.MigrationName == name {
			on["PtahMigrationApproval/"+a.Name] = true
		}
	}
	var acks v1alpha1.PtahMigrationRunAcknowledgmentList
	if err := r.Client.List(ctx, &acks, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("list ptahmigrationrunacknowledgments in namespace %s: %w", r.Namespace, err)
	}
	for _, a := range acks.Items {
		if a.Spec.MigrationName == name {
			on["PtahMigrationRunAcknowledgment/"+a.Name] = true
		}
	}
	return r.events(ctx, on)
}

// events is the namespace's Events on the objects on names, oldest first.
func (r Reader) events(ctx context.Context, on map[string]bool) (*corev1.EventList, error) {
	var list corev1.EventList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("list events in namespace %s: %w", r.Namespace, err)
	}
	evs := &corev1.EventList{Items: []corev1.Event{}}
	for _, ev := range list.Items {
		if on[ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name] {
			evs.Items = append(evs.Items, ev)
		}
	}
	sort.SliceStable(evs.Items, func(i, j int) bool { return when(evs.Items[i]).Before(when(evs.Items[j])) })
	return evs, nil
}

// writeEvents prints evs, what naming the objects they were recorded on.
func writeEvents(w io.Writer, what string, evs []corev1.Event, now time.Time) error {
	if len(evs) == 0 {
		_, err := fmt.Fprintf(w, "No events on %s.\n", what)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGE\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, ev := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\n", now.Sub(when(ev)).Round(time.Second), ev.Type, ev.Reason,
			ev.InvolvedObject.Kind, ev.InvolvedObject.Name, oneLine(ev.Message))
	}
	return tw.Flush()
}

// when is an Event's latest time, whichever API recorded it.
func when(ev corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
