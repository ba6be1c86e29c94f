"""fairprobe.twosource"""
