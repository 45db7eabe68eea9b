"""Edit one field of a model dict by its path (the bad-input tests)."""
import copy

DELETE = object()          # value that removes the field instead of setting it


def set_path(d, path, value):
    """A deep copy of d with d[path[0]][path[1]]... set to value (or removed: DELETE)."""
    d = copy.deepcopy(d)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    if value is DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return d
