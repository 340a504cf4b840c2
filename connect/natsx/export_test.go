package natsx

// Waiting returns how many of s's messages wait for the server's answer.
func Waiting(s *Sink) int {
	s.pub.mu.Lock()
	defer s.pub.mu.Unlock()
	return len(s.pub.pending)
}
