package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// uidSet is what a reconciler remembers across reconciles (the refusals
// it reported, the subjects it swept): safe for the workers that
// reconcile many objects at once. The zero value is empty and usable.
type uidSet struct {
	mu  sync.Mutex
	set map[types.UID]struct{}
}

func (s *uidSet) has(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[uid]
	return ok
}

// add adds uid and says whether it was new.
func (s *uidSet) add(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[uid]; ok {
		return false
	}
	if s.set == nil {
		s.set = map[types.UID]struct{}{}
	}
	s.set[uid] = struct{}{}
	return true
}

func (s *uidSet) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, uid)
}
