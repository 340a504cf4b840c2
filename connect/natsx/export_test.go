package natsx

// Waiting returns how many of s's writes wait for the server's answers.
func Waiting(s *Sink) int {
	s.pub.mu.Lock()
	defer s.pub.mu.Unlock()
	return len(s.pub.pending)
}
