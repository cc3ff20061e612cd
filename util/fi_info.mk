# util/fi_info
