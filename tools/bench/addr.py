"""Endpoints in text, for either family: an IPv6 address goes in brackets
wherever a port follows it (the programs' --client, URLs, Host headers)."""


def hostport(ip, port):
    """198.18.0.2:7007 or [2001:db8::2]:7007."""
    return ("[%s]:%d" if ":" in ip else "%s:%d") % (ip, port)


def url(ip, port, path="/"):
    return "http://%s%s" % (hostport(ip, port), path)
