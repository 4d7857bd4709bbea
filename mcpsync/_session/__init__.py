"""The client's side of one conversation with a server, in both protocol eras."""
