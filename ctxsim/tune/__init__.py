"""`ctxsim tune`: the search (`search`), the parameter space each policy family is searched over (`space`)
and what a search writes (`outputs`)."""
